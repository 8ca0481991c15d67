import { randomFillSync } from 'node:crypto'
import type { Plant } from '../schemas/plant.js'
import { isoTime } from '../store/iso-time.js'

/** A new subscription gets all of them. */
export const WEBHOOK_EVENT_TYPES = ['plant.created', 'plant.updated', 'plant.deleted'] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]

/** The event `POST /webhooks/{id}/test` sends; no subscription asks for it, every one can get it. */
export const TEST_EVENT_TYPE = 'webhook.test'

/** What each event type means, for the catalog (GET /webhooks/event-types) and the OpenAPI document. */
export const EVENT_DESCRIPTIONS: Record<WebhookEventType | typeof TEST_EVENT_TYPE, string> = {
  'plant.created': 'A plant was created; `data` is the plant',
  'plant.updated': 'A plant was replaced or updated; `data` is the plant after the change',
  'plant.deleted': 'A plant was deleted; `data` is the plant as it was',
  'webhook.test': 'A test, sent by `POST /webhooks/{id}/test` to that subscription only; `data` names it'
}

/** The body of a test event. */
export const testEventPayload = (subscriptionId: bigint, now: number): string =>
  `{"type":"${TEST_EVENT_TYPE}","timestamp":${JSON.stringify(isoTime(now))},"data":{"subscriptionId":${subscriptionId.toString()}}}`

export const isWebhookEventType = (value: string): value is WebhookEventType =>
  (WEBHOOK_EVENT_TYPES as readonly string[]).includes(value)

/** The request id of the write that caused the event, and with tracing on its span's traceparent. */
export interface EventOrigin {
  requestId?: string
  traceparent?: string
}

/** What an event is about: a resource (`plant`) and its id. */
export interface EventSubject {
  resource: string
  id: bigint
}

/**
 * An event as a repository writes it to the outbox, in the same transaction as its change: its
 * type, its subject and `data`, the JSON of the representation the payload carries.
 */
export interface ResourceEvent {
  origin?: EventOrigin
  type: WebhookEventType
  subject: EventSubject
  data: string
  occurredAt?: number
}

/** For `plant.deleted`, `plant` as it was when deleted. */
export const plantEvent = (type: WebhookEventType, plant: Plant, occurredAt?: number, origin?: EventOrigin): ResourceEvent => ({
  type,
  subject: { resource: 'plant', id: plant.id },
  data: plantJson(plant),
  ...(occurredAt !== undefined && { occurredAt }),
  ...(origin !== undefined && { origin })
})

/** An outbox row, the same on every store: the exact bytes every attempt sends and signs. */
export interface EventMessage {
  requestId: string | null
  traceparent: string | null
  /** The `webhook-id`: the same on every attempt and for every subscription. */
  messageId: string
  type: WebhookEventType
  subject: EventSubject
  payload: string
}

const MESSAGE_ID_BYTES = 16
// Message ids drawn 256 at a time from the CSPRNG: see docs/performance.md#what-the-measurements-decided.
const idPool = Buffer.allocUnsafe(MESSAGE_ID_BYTES * 256)
let idOffset = idPool.length

/** Unique without coordination between instances. */
export function newMessageId (): string {
  if (idOffset === idPool.length) {
    randomFillSync(idPool)
    idOffset = 0
  }
  const id = idPool.toString('base64url', idOffset, idOffset + MESSAGE_ID_BYTES)
  idOffset += MESSAGE_ID_BYTES
  return `msg_${id}`
}

/** Field by field: a bigint id, which JSON.stringify refuses, must reach the receiver as the API's JSON integer. */
export function plantJson (plant: Plant): string {
  return `{"id":${plant.id.toString()}${plantJsonAfterId(plant)}`
}

function plantJsonAfterId (plant: Omit<Plant, 'id'>): string {
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`
  return `,"name":${JSON.stringify(plant.name)}${tag},` +
    `"createdAt":${JSON.stringify(plant.createdAt)},"updatedAt":${JSON.stringify(plant.updatedAt)}}`
}

/** The Standard Webhooks body: `{ type, timestamp (RFC 3339), data }`. */
export function eventPayload (type: WebhookEventType, data: string, occurredAt: number): string {
  return `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(isoTime(occurredAt))},"data":${data}}`
}

/** For PostgreSQL's one-statement create, so the body is still made here, never a second way in SQL. */
export function eventPayloadAroundId (type: WebhookEventType, plant: Omit<Plant, 'id'>, occurredAt: number): { before: string, after: string } {
  return {
    before: `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(isoTime(occurredAt))},"data":{"id":`,
    after: `${plantJsonAfterId(plant)}}`
  }
}

/** Built once, at enqueue time: retries resend these bytes unchanged. */
export function buildEventMessage (event: ResourceEvent, now: number): EventMessage {
  return {
    messageId: newMessageId(),
    type: event.type,
    subject: event.subject,
    requestId: event.origin?.requestId ?? null,
    traceparent: event.origin?.traceparent ?? null,
    payload: eventPayload(event.type, event.data, event.occurredAt ?? now)
  }
}
