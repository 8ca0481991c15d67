import { randomFillSync } from 'node:crypto'
import { resourceScope, type Scope, type ScopeCatalog } from '../auth/scopes.js'
import { isoTime } from '../store/iso-time.js'
import type { EventOrigin } from './origin.js'

export const RESOURCE_CHANGES = ['created', 'updated', 'deleted'] as const
export type ResourceChange = (typeof RESOURCE_CHANGES)[number]

/** A resource's `<name>.created`, `.updated` or `.deleted`: an app's resources declare which exist. */
export type WebhookEventType = `${string}.${ResourceChange}`
export const eventType = <N extends string>(resource: { name: N }, change: ResourceChange): `${N}.${ResourceChange}` =>
  `${resource.name}.${change}`

interface EventResource {
  readonly name: string
  readonly collection: string
}

/** In the resources' order: each one's created, updated and deleted. */
export const eventTypesOf = (resources: readonly EventResource[]): WebhookEventType[] =>
  resources.flatMap((resource) => RESOURCE_CHANGES.map((change) => eventType(resource, change)))

/** As the docs name them: `plant` (`plant events`), `plant and pot`. */
export const eventSubjectsOf = (resources: readonly EventResource[]): string =>
  resources.map((resource) => resource.name).join(' and ')

/** The event `POST /webhooks/{id}/test` sends; no subscription asks for it, every one can get it. */
export const TEST_EVENT_TYPE = 'webhook.test'
export const TEST_EVENT_DESCRIPTION =
  'A test, sent by `POST /webhooks/{id}/test` to that subscription only; `data` names it'

export const testEventPayload = (subscriptionId: bigint, now: number): string =>
  `{"type":"${TEST_EVENT_TYPE}","timestamp":${JSON.stringify(isoTime(now))},` +
  `"data":{"subscriptionId":${subscriptionId.toString()}}}`

/** The first read scope `held` lacks for `events`; unknown names are the service's to refuse. */
export function missingEventScope (
  events: readonly string[], held: ReadonlySet<Scope>, catalog: Pick<ScopeCatalog, 'grants'>,
  resources: readonly EventResource[]
): Scope | undefined {
  const scopeOf = new Map<string, Scope>(resources.flatMap((resource) =>
    RESOURCE_CHANGES.map((change) => [eventType(resource, change), resourceScope(resource, 'read')] as const)))
  return events.flatMap((type) => scopeOf.get(type) ?? []).find((scope) => !catalog.grants(held, scope))
}

interface EventSubject {
  resource: string
  id: bigint
}

/** Written to the outbox in the same transaction as its change; `data` is the representation's JSON. */
export interface ResourceEvent {
  origin?: EventOrigin
  type: WebhookEventType
  subject: EventSubject
  data: string
  occurredAt?: number
}

/** For a delete, `item` as it was. */
export function resourceEvent<T extends { id: bigint }> (
  resource: { name: string, json: (item: T) => string }, change: ResourceChange, item: T, occurredAt?: number,
  origin?: EventOrigin
): ResourceEvent {
  return {
    type: eventType(resource, change),
    subject: { resource: resource.name, id: item.id },
    data: resource.json(item),
    ...(occurredAt !== undefined && { occurredAt }),
    ...(origin !== undefined && { origin })
  }
}

/** An outbox row, the same on every store: the exact bytes every attempt sends and signs. */
interface EventMessage {
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

export function newMessageId (): string {
  if (idOffset === idPool.length) {
    randomFillSync(idPool)
    idOffset = 0
  }
  const id = idPool.toString('base64url', idOffset, idOffset + MESSAGE_ID_BYTES)
  idOffset += MESSAGE_ID_BYTES
  return `msg_${id}`
}

export const eventPayloadHead = (type: WebhookEventType, occurredAt: number): string =>
  `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(isoTime(occurredAt))},"data":`

/** The Standard Webhooks body: `{ type, timestamp (RFC 3339), data }`. */
export const eventPayload = (type: WebhookEventType, data: string, occurredAt: number): string =>
  `${eventPayloadHead(type, occurredAt)}${data}}`

/** For PostgreSQL's one-statement create, so the body is still made here, never a second way in SQL. */
export const eventPayloadAroundId = (type: WebhookEventType, dataAfterId: string, occurredAt: number) =>
  ({ before: `${eventPayloadHead(type, occurredAt)}{"id":`, after: `${dataAfterId}}` })

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
