import type { OpenAPIV3_2 as OpenApi } from '@fastify/swagger'
import { Type, type TObject, type TSchema } from '@sinclair/typebox'
import type { ResourceDefinition } from '../resources/definition.js'
import {
  eventPayload, eventType, RESOURCE_CHANGES, TEST_EVENT_DESCRIPTION, TEST_EVENT_TYPE, testEventPayload,
  type ResourceChange, type WebhookEventType
} from '../webhooks/events.js'
import { signatureHeader } from '../webhooks/signing.js'
import { ref } from './ref.js'
import { SECRET_EXAMPLE } from './webhook.js'
import { TIME_EXAMPLE, timeSchema } from './time.js'

// What receivers get, in the OpenAPI `webhooks` section: each example is a real, verifiable delivery.

const EXAMPLE_MESSAGE_ID = 'msg_2KWPBgLlAfxdpx2AI54pPJ'
const EXAMPLE_SECONDS = Math.floor(Date.parse(TIME_EXAMPLE) / 1000)

const examplePayload = (type: WebhookEventType, resource: ResourceDefinition): string =>
  eventPayload(type, resource.json({ ...resource.example, id: BigInt(resource.example.id) }), Date.parse(TIME_EXAMPLE))

const testEventData = (): TObject => Type.Object(
  { subscriptionId: Type.Integer({ description: 'The subscription tested' }) },
  { additionalProperties: false }
)

/** An event type as the document describes it; `schema` is the `$id` of its body schema. */
interface SentEvent {
  type: string
  schema: string
  what: string
  data: () => TSchema
  /** None for the test event. */
  resource?: ResourceDefinition
  example: string
  sentTo: string
  failed: string
}

const RETRIED = 'Not acknowledged: the delivery is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (±20 %; ' +
  'WEBHOOK_RETRY_SCHEDULE), then it has failed. A subscription whose deliveries keep failing for ' +
  'WEBHOOK_DISABLE_AFTER_MS (5 days by default) is disabled'

/** Its body schema's `$id` is `PlantCreatedEvent`. */
function resourceEventSent (resource: ResourceDefinition, change: ResourceChange): SentEvent {
  const type = eventType(resource, change)
  return {
    type,
    schema: `${resource.title}${change.charAt(0).toUpperCase()}${change.slice(1)}Event`,
    what: resource.texts.events[change],
    data: () => ref(resource.schemas.representation),
    resource,
    example: examplePayload(type, resource),
    sentTo: `The service POSTs it to every enabled subscription that asks for \`${type}\``,
    failed: RETRIED
  }
}

const sentEvents = (resources: readonly ResourceDefinition[]): readonly SentEvent[] => [
  ...resources.flatMap((resource) => RESOURCE_CHANGES.map((change) => resourceEventSent(resource, change))),
  {
    type: TEST_EVENT_TYPE,
    schema: 'WebhookTestEvent',
    what: TEST_EVENT_DESCRIPTION,
    data: testEventData,
    example: testEventPayload(1n, Date.parse(TIME_EXAMPLE)),
    sentTo: 'The service POSTs it when `POST /webhooks/{id}/test` asks, to that subscription only, enabled or not',
    failed: 'Not acknowledged: `POST /webhooks/{id}/test` answers with this outcome; nothing is stored or retried'
  }
]

const eventSchema = ({ type, schema, what, data, example }: SentEvent): TObject => Type.Object(
  {
    type: Type.Literal(type, { description: 'The event type', examples: [type] }),
    timestamp: timeSchema('When the change happened'),
    data: data()
  },
  {
    $id: schema,
    additionalProperties: false,
    description: `The body of a \`${type}\` delivery. ${what}`,
    examples: [JSON.parse(example) as unknown]
  }
)

export const webhookEventSchemas = (resources: readonly ResourceDefinition[]): readonly TObject[] =>
  sentEvents(resources).map(eventSchema)

const header = (name: string, description: string, pattern: string, example: string) => ({
  name, in: 'header', required: true, description, schema: { type: 'string' as const, pattern }, example
})

function eventOperation ({ type, schema, what, example, sentTo, failed }: SentEvent): OpenApi.PathItemObject {
  const name = type.replace(/\.(\w)/, (_match, first: string) => first.toUpperCase())
  return {
    post: {
      operationId: `${name}Event`,
      summary: `The \`${type}\` event`,
      description:
        `${what}. ${sentTo}, ` +
        "signed as Standard Webhooks specifies: verify `webhook-signature` with the subscription's secret over " +
        '`{webhook-id}.{webhook-timestamp}.{body}` (the body exactly as received), and refuse old timestamps. ' +
        'Delivery is at least once: deduplicate on `webhook-id`. Redirects are not followed.',
      tags: ['webhooks'],
      // Sent by the service, not called by clients: the signature authenticates it.
      security: [],
      parameters: [
        header(
          'webhook-id',
          'The message id: the same on every attempt of this event, and for every subscription (deduplicate on it)',
          '^msg_[A-Za-z0-9_-]{22}$',
          EXAMPLE_MESSAGE_ID
        ),
        header(
          'webhook-timestamp',
          'When this attempt was signed, in seconds since the Unix epoch',
          '^[0-9]+$',
          String(EXAMPLE_SECONDS)
        ),
        header(
          'webhook-signature',
          'Space-separated `v1,<base64 HMAC-SHA256>` signatures: one with the current secret, and for 24 hours ' +
            'after a rotation one with the previous secret too',
          '^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$',
          signatureHeader([SECRET_EXAMPLE], EXAMPLE_MESSAGE_ID, EXAMPLE_SECONDS, example)
        )
      ],
      requestBody: {
        required: true,
        description: 'The event (Content-Type: application/json)',
        content: {
          'application/json': {
            schema: { $ref: `#/components/schemas/${schema}` },
            example: JSON.parse(example) as unknown
          }
        }
      },
      responses: {
        '2XX': {
          description:
            'Acknowledged: the delivery succeeded (the body is ignored). Answer within WEBHOOK_TIMEOUT_MS (10 s by ' +
            'default), then do the work'
        },
        ...(failed === RETRIED && {
          410: {
            description: 'Gone: the receiver wants no more events. The delivery fails and the subscription is disabled'
          }
        }),
        '4XX': { description: failed },
        '5XX': { description: failed }
      }
    }
  }
}

export const webhookEventsDocument = (
  resources: readonly ResourceDefinition[]
): Record<string, OpenApi.PathItemObject> =>
  Object.fromEntries(sentEvents(resources).map((event) => [event.type, eventOperation(event)]))

interface EventTypeEntry {
  type: string
  description: string
  schema: Record<string, unknown>
}

const bodySchema = (type: string, data: Record<string, unknown>): Record<string, unknown> => ({
  type: 'object',
  required: ['type', 'timestamp', 'data'],
  additionalProperties: false,
  properties: {
    type: { const: type },
    timestamp: { type: 'string', format: 'date-time', description: 'When the event happened' },
    data
  }
})

/** A schema as the catalog gives it: JSON, without `$id` and examples. */
const plainSchema = (schema: TSchema): Record<string, unknown> => {
  const { $id: _id, examples: _examples, ...data } = JSON.parse(JSON.stringify(schema)) as Record<string, unknown>
  return data
}

/** GET /webhooks/event-types: the body schemas are self-contained JSON, without `$id`s. */
export function eventTypeCatalog (resources: readonly ResourceDefinition[]): EventTypeEntry[] {
  return sentEvents(resources).map(({ type, what, data, resource }) => {
    const schema = resource === undefined ? data() : resource.schemas.representation
    return { type, description: what, schema: bodySchema(type, plainSchema(schema)) }
  })
}
