import { Type } from '@sinclair/typebox'
import { MAX_DESCRIPTION_LENGTH } from '../webhooks/service.js'
import { eventSubjectsOf, eventTypesOf, type WebhookEventType } from '../webhooks/events.js'
import { MAX_WEBHOOK_URL_LENGTH } from '../webhooks/url-policy.js'
import { int64IdSchema, int64StringSchema } from './int64.js'
import { cursorSchema, listLimitSchema } from './paging.js'
import { STORABLE_TEXT, STORABLE_TEXT_RULE } from './text.js'
import { ref } from './ref.js'
import { TIME_EXAMPLE, timeSchema } from './time.js'

const URL_EXAMPLE = 'https://receiver.example.com/hooks'
export const PAYLOAD_EXAMPLE = '{"type":"plant.created","timestamp":"2026-01-02T03:04:05.678Z","data":' +
  '{"id":1,"name":"Monstera","createdAt":"2026-01-02T03:04:05.678Z","updatedAt":"2026-01-02T03:04:05.678Z"}}'
export const SECRET_EXAMPLE = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3R4L2fO8s6k='

const URL_RULE =
  `an absolute http or https URL of at most ${MAX_WEBHOOK_URL_LENGTH} characters, without credentials, whose host ` +
  'is (or resolves to) public addresses only'

/** src/webhooks/url-policy.ts checks the rest (scheme, credentials, addresses). */
const urlInput = (description: string) =>
  Type.String({ format: 'uri', maxLength: MAX_WEBHOOK_URL_LENGTH, description, examples: [URL_EXAMPLE] })

export const eventTypeSchema = (types: readonly WebhookEventType[]) => Type.Unsafe<WebhookEventType>({
  type: 'string',
  enum: [...types],
  description: 'An event type',
  examples: ['plant.created']
})

const eventsInput = (types: readonly WebhookEventType[], description: string) => Type.Array(eventTypeSchema(types), {
  minItems: 1,
  maxItems: 100,
  description,
  examples: [['plant.created', 'plant.deleted']]
})

const descriptionOptions = {
  maxLength: MAX_DESCRIPTION_LENGTH,
  pattern: STORABLE_TEXT,
  description: `What the subscription is for, for people: at most ${MAX_DESCRIPTION_LENGTH} characters; ` +
    `${STORABLE_TEXT_RULE}`,
  examples: ['Sync to the shop front']
}

const webhookExample = (types: readonly WebhookEventType[]) => ({
  id: 1,
  url: URL_EXAMPLE,
  events: [...types],
  description: 'Sync to the shop front',
  disabled: false,
  createdAt: TIME_EXAMPLE,
  updatedAt: TIME_EXAMPLE
})

/** `whsec_` and 24 to 64 bytes in base64 (Standard Webhooks); the service checks the decoded length. */
const SECRET_PATTERN = '^whsec_[A-Za-z0-9+/]{32,88}={0,2}$'

const secretSchema = (description: string) =>
  Type.String({ pattern: SECRET_PATTERN, description, examples: [SECRET_EXAMPLE] })

const SECRET_DESCRIPTION =
  'The signing secret (Standard Webhooks): `whsec_` and 24 to 64 bytes in base64 (32 random ' +
  "bytes unless the integrator supplied one). Verify each delivery's `webhook-signature` with it. Shown to the token " +
  'that owns the subscription only, and only at creation, by rotation and by `GET /webhooks/{id}/secret`; never logged'

const webhookProperties = (types: readonly WebhookEventType[]) => ({
  id: int64IdSchema('The subscription identifier (signed 64-bit)'),
  url: Type.String({ format: 'uri', description: 'Where events are POSTed', examples: [URL_EXAMPLE] }),
  events: Type.Array(eventTypeSchema(types), {
    description: 'The event types delivered, in a fixed order, each once',
    examples: [[...types]]
  }),
  description: Type.Optional(Type.String({ ...descriptionOptions, description: 'What the subscription is for' })),
  disabled: Type.Boolean({
    description:
      'A disabled subscription gets no new deliveries and its pending ones wait. The service disables it when its ' +
      'receiver answers 410 Gone or its deliveries keep failing (WEBHOOK_DISABLE_AFTER_MS); a PATCH with ' +
      '`"disabled": false` enables it again',
    examples: [false]
  }),
  disabledReason: Type.Optional(Type.String({
    description:
      'Why the service keeps a disabled subscription paused, while that still holds: the named token that owns it ' +
      'lacks a read scope its events need (its scopes were narrowed), so it may not receive them; enabling it ' +
      'needs that scope. Read-only',
    examples: [
      'Paused: the token that owns it lacks the scope plants:read, which its events need; enabling it needs that scope'
    ]
  })),
  createdAt: timeSchema('When the subscription was created; never changes'),
  updatedAt: timeSchema('When the subscription was last changed')
})

function subscriptionSchemas (types: readonly WebhookEventType[]) {
  const example = webhookExample(types)
  const webhook = Type.Object(webhookProperties(types), {
    $id: 'Webhook',
    additionalProperties: false,
    description: 'A webhook subscription, as the token that owns it sees it (its secret: `GET /webhooks/{id}/secret`)',
    examples: [example]
  })
  const withSecret = Type.Object({ ...webhookProperties(types), secret: secretSchema(SECRET_DESCRIPTION) }, {
    $id: 'WebhookWithSecret',
    additionalProperties: false,
    description: 'A webhook subscription with its signing secret: the answer to its creation and to a rotation',
    examples: [{ ...example, secret: SECRET_EXAMPLE }]
  })
  const list = Type.Array(ref(webhook), {
    $id: 'WebhookList',
    description: 'Webhook subscriptions ordered by id',
    examples: [[example]]
  })
  return { WebhookSchema: webhook, WebhookWithSecretSchema: withSecret, WebhookListSchema: list }
}

export const WebhookSecretSchema = Type.Object({ secret: secretSchema(SECRET_DESCRIPTION) }, {
  $id: 'WebhookSecret',
  additionalProperties: false,
  description: 'A subscription\'s current signing secret',
  examples: [{ secret: SECRET_EXAMPLE }]
})

export const RotateWebhookSecretSchema = Type.Object({
  secret: Type.Optional(secretSchema(
    'The new secret, when the integrator chooses it (e.g. one migrated from another ' +
      'provider): `whsec_` and 24 to 64 bytes in base64; a random one when absent'
  ))
}, {
  $id: 'RotateWebhookSecret',
  additionalProperties: false,
  description: "What a rotation sets: a secret of the integrator's, or (absent, or no body at all) a random one",
  examples: [{ secret: SECRET_EXAMPLE }, {}]
})

/** What a subscription without `events` gets, as the schema and the create route say it. */
export const defaultEventsText = (resources: readonly unknown[]): string =>
  resources.length === 1 ? 'every event type' : 'the event types of every resource the token may read'

/** `absent`: what a subscription without `events` gets. */
const newWebhookSchema = (types: readonly WebhookEventType[], absent: string) => Type.Object({
  url: urlInput(`Where to POST events: ${URL_RULE}`),
  events: Type.Optional(
    eventsInput(types, `The event types to deliver (duplicates count once); ${absent} when absent`)
  ),
  description: Type.Optional(Type.String(descriptionOptions)),
  disabled: Type.Optional(Type.Boolean({
    description: 'Create it disabled: no deliveries until a PATCH enables it (false when absent)',
    examples: [false]
  }))
}, {
  $id: 'NewWebhook',
  additionalProperties: false,
  description: 'A webhook subscription to create',
  examples: [{ url: URL_EXAMPLE, events: ['plant.created', 'plant.deleted'], description: 'Sync to the shop front' }]
})

const webhookPatchSchema = (types: readonly WebhookEventType[]) => Type.Object({
  url: Type.Optional(urlInput(`A new URL: ${URL_RULE}`)),
  events: Type.Optional(eventsInput(types, 'The event types to deliver from now on (duplicates count once)')),
  description: Type.Optional(Type.Unsafe<string | null>({
    ...descriptionOptions,
    type: ['string', 'null'],
    description: `${descriptionOptions.description}; null removes it`
  })),
  disabled: Type.Optional(
    Type.Boolean({ description: 'Disable the subscription, or enable it again', examples: [false] })
  )
}, {
  $id: 'WebhookPatch',
  additionalProperties: false,
  description:
    'A JSON merge patch (RFC 7396) of a webhook subscription: a missing field is kept, `"description": null` ' +
    'removes the description',
  examples: [{ events: ['plant.created'], description: null }]
})

export const WebhookParamsSchema =
  Type.Object({ id: int64StringSchema('The subscription id') }, { additionalProperties: false })

export const WebhookListQuerySchema = Type.Object({
  limit: listLimitSchema('subscriptions'),
  after: cursorSchema('Cursor: only subscriptions with a larger id')
}, { additionalProperties: false })

export const RecoverWebhookSchema = Type.Object({
  since: timeSchema('Re-queue the failed deliveries created at this time (RFC 3339) or later')
}, {
  $id: 'RecoverWebhook',
  additionalProperties: false,
  description: 'Which failed deliveries to attempt again',
  examples: [{ since: TIME_EXAMPLE }]
})

export const WebhookRecoverySchema = Type.Object({
  recovered: Type.Integer({ minimum: 0, description: 'How many failed deliveries are due again now', examples: [3] })
}, {
  $id: 'WebhookRecovery',
  additionalProperties: false,
  description: 'What a recovery re-queued',
  examples: [{ recovered: 3 }]
})

const TEST_EXAMPLE = {
  webhookId: 'msg_2KWPBgLlAfxdpx2AI54pPJ',
  succeeded: true,
  at: TIME_EXAMPLE,
  durationMs: 41,
  statusCode: 204,
  responseBody: ''
}

export const WebhookTestResultSchema = Type.Object({
  webhookId: Type.String({ description: "The test event's `webhook-id`", examples: [TEST_EXAMPLE.webhookId] }),
  succeeded: Type.Boolean({ description: 'The receiver answered 2xx', examples: [true] }),
  at: timeSchema('When it was sent'),
  durationMs: Type.Integer({ format: 'int32', minimum: 0, description: 'How long the attempt took', examples: [41] }),
  statusCode: Type.Optional(Type.Integer({
    format: 'int32', description: "The receiver's status code, when it answered", examples: [204]
  })),
  error: Type.Optional(
    Type.String({ description: 'Why the attempt did not succeed', examples: ['the receiver answered 500'] })
  ),
  responseBody: Type.Optional(Type.String({
    description: "The first 1 KiB of the answer's body, when it answered", examples: ['']
  }))
}, {
  $id: 'WebhookTestResult',
  additionalProperties: false,
  description: "The outcome of a test event's one attempt",
  examples: [TEST_EXAMPLE]
})

const webhookEventTypeListSchema = (subjects: string) => Type.Array(
  Type.Object(
    {
      type: Type.String({ description: 'The event type', examples: ['plant.created'] }),
      description: Type.String({
        description: 'What it means', examples: ['A plant was created; `data` is the plant']
      }),
      schema: Type.Record(Type.String(), Type.Unknown(), {
        description: 'The JSON Schema of its body (self-contained)'
      })
    },
    { additionalProperties: false }
  ),
  {
    $id: 'WebhookEventTypeList',
    description: `Every event type a receiver can get: the ${subjects} events a subscription asks for, and ` +
      '`webhook.test`',
    examples: [[{ type: 'webhook.test', description: 'A test', schema: { type: 'object' } }]]
  }
)

/** The shared schemas that name the app's event types. */
export function webhookSchemasOf (resources: Parameters<typeof eventTypesOf>[0]) {
  const types = eventTypesOf(resources)
  return {
    ...subscriptionSchemas(types),
    NewWebhookSchema: newWebhookSchema(types, defaultEventsText(resources)),
    WebhookPatchSchema: webhookPatchSchema(types),
    WebhookEventTypeListSchema: webhookEventTypeListSchema(eventSubjectsOf(resources))
  }
}
