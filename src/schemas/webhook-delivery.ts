import { Type } from '@sinclair/typebox'
import type { WebhookEventType } from '../webhooks/events.js'
import { int64IdSchema, int64StringSchema } from './int64.js'
import { cursorSchema, listLimitSchema } from './paging.js'
import { ref } from './ref.js'
import { TIME_EXAMPLE, timeSchema } from './time.js'
import { eventTypeSchema, PAYLOAD_EXAMPLE } from './webhook.js'

const DELIVERY_EXAMPLE = {
  id: 7,
  eventType: 'plant.created',
  status: 'pending',
  attempts: 1,
  lastAttemptAt: TIME_EXAMPLE,
  lastStatusCode: 503,
  lastError: 'the receiver answered 503',
  nextAttemptAt: '2026-01-02T03:04:10.678Z',
  createdAt: TIME_EXAMPLE
}

const statusSchema = (description: string, example: string) =>
  Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')], {
    description,
    examples: [example]
  })

const webhookDeliverySchema = (types: readonly WebhookEventType[]) => Type.Object(
  {
    id: int64IdSchema('The delivery identifier (signed 64-bit)'),
    eventType: eventTypeSchema(types),
    status: statusSchema(
      '`pending`: an attempt is due (at `nextAttemptAt`); `succeeded`: the receiver answered 2xx; `failed`: ' +
        'the retries are spent, or the receiver answered 410 Gone',
      'pending'
    ),
    attempts: Type.Integer({ format: 'int32', minimum: 0, description: 'Attempts made so far', examples: [1] }),
    lastAttemptAt: Type.Optional(timeSchema('When the latest attempt was made')),
    lastStatusCode: Type.Optional(Type.Integer({
      format: 'int32',
      description: "The receiver's status code for the latest attempt, when it answered",
      examples: [503]
    })),
    lastError: Type.Optional(
      Type.String({ description: 'Why the latest attempt did not succeed', examples: ['the receiver answered 503'] })
    ),
    nextAttemptAt: Type.Optional(timeSchema('When the next attempt is due (pending deliveries only)')),
    createdAt: timeSchema('When the event happened and the delivery was created')
  },
  {
    $id: 'WebhookDelivery',
    additionalProperties: false,
    description: 'One event on its way to one subscription, with its latest attempt',
    examples: [DELIVERY_EXAMPLE]
  }
)

const ATTEMPT_EXAMPLE = {
  at: TIME_EXAMPLE,
  durationMs: 182,
  statusCode: 503,
  error: 'the receiver answered 503',
  responseBody: '{"error":"try later"}'
}

export const WebhookDeliveryAttemptSchema = Type.Object(
  {
    at: timeSchema('When the attempt started'),
    durationMs: Type.Integer({
      format: 'int32',
      minimum: 0,
      description: "How long it took, to the answer's end (or its failure)",
      examples: [182]
    }),
    statusCode: Type.Optional(
      Type.Integer({ format: 'int32', description: "The receiver's status code, when it answered", examples: [503] })
    ),
    error: Type.Optional(Type.String({
      description: 'Why the attempt did not succeed (no answer, or not a 2xx)',
      examples: ['the receiver answered 503']
    })),
    responseBody: Type.Optional(Type.String({
      description: "The first 1 KiB of the answer's body (as UTF-8), when it answered",
      examples: ['{"error":"try later"}']
    }))
  },
  {
    $id: 'WebhookDeliveryAttempt',
    additionalProperties: false,
    description: 'One attempt of a delivery',
    examples: [ATTEMPT_EXAMPLE]
  }
)

const webhookDeliveryDetailSchema = (delivery: ReturnType<typeof webhookDeliverySchema>) => Type.Object(
  {
    ...delivery.properties,
    webhookId: Type.String({
      description: "The event's `webhook-id` header, the same on every attempt",
      examples: ['msg_2KWPBgLlAfxdpx2AI54pPJ85f4W']
    }),
    payload: Type.String({
      description: 'The body every attempt sent, byte for byte (JSON text: `{ type, timestamp, data }`)',
      examples: [PAYLOAD_EXAMPLE]
    }),
    attemptLog: Type.Array(ref(WebhookDeliveryAttemptSchema), {
      description: 'Every attempt so far, oldest first',
      examples: [[ATTEMPT_EXAMPLE]]
    })
  },
  {
    $id: 'WebhookDeliveryDetail',
    additionalProperties: false,
    description: 'One delivery with its event as sent and every attempt',
    examples: [{
      ...DELIVERY_EXAMPLE,
      webhookId: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
      payload: PAYLOAD_EXAMPLE,
      attemptLog: [ATTEMPT_EXAMPLE]
    }]
  }
)

/** The shared delivery schemas that name event types, for `types` (an app's): each under its usual `$id`. */
export function deliverySchemasOf (types: readonly WebhookEventType[]) {
  const delivery = webhookDeliverySchema(types)
  return {
    WebhookDeliverySchema: delivery,
    WebhookDeliveryDetailSchema: webhookDeliveryDetailSchema(delivery),
    WebhookDeliveryListSchema: Type.Array(ref(delivery), {
      $id: 'WebhookDeliveryList',
      description: 'Deliveries, newest first',
      examples: [[DELIVERY_EXAMPLE]]
    })
  }
}

export const WebhookDeliveryParamsSchema = Type.Object(
  { id: int64StringSchema('The subscription id'), deliveryId: int64StringSchema('The delivery id') },
  { additionalProperties: false }
)

export const deliveryListQuerySchema = (types: readonly WebhookEventType[]) => Type.Object(
  {
    limit: listLimitSchema('deliveries'),
    before: cursorSchema('Cursor: only deliveries with a smaller id (older ones)'),
    status: Type.Optional(statusSchema('Only deliveries with this status', 'failed')),
    eventType: Type.Optional(Type.Unsafe<WebhookEventType>({
      type: 'string',
      enum: [...types],
      description: 'Only deliveries of this event type',
      examples: ['plant.updated']
    }))
  },
  { additionalProperties: false }
)
