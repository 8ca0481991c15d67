import { isoTime } from '../store/iso-time.js'
import { isWebhookEventType, type EventOrigin, type WebhookEventType } from './events.js'
import type { ClaimedDelivery, DeliveryStatus, WebhookDelivery, WebhookSubscription } from './store.js'

/** Integers as the drivers hand them over: bigint (SQLite safe integers, int8) or number (int4). */
type Int = bigint | number

/** A subscription row, once each store has turned its own column types into these. */
export interface SubscriptionRow {
  id: bigint
  url: string
  events: readonly string[]
  description: string | null
  disabled: boolean
  secret: string
  created_at: Int
  updated_at: Int
}

export interface DeliveryRow {
  id: bigint
  event_type: string
  status: string
  attempts: Int
  last_attempt_at: Int | null
  last_status_code: Int | null
  last_error: string | null
  next_attempt_at: Int | null
  created_at: Int
}

const time = (ms: Int): string => isoTime(Number(ms))

/** Known event types only: a type a newer version stored is left out rather than passed on unchecked. */
export const toEventTypes = (names: readonly string[]): WebhookEventType[] => names.filter(isWebhookEventType)

export function toSubscription (row: SubscriptionRow): WebhookSubscription {
  const subscription: WebhookSubscription = {
    id: row.id,
    url: row.url,
    events: toEventTypes(row.events),
    disabled: row.disabled,
    secret: row.secret,
    createdAt: time(row.created_at),
    updatedAt: time(row.updated_at)
  }
  if (row.description !== null) subscription.description = row.description
  return subscription
}

export function toDelivery (row: DeliveryRow): WebhookDelivery {
  const delivery: WebhookDelivery = {
    id: row.id,
    eventType: row.event_type as WebhookEventType,
    status: row.status as DeliveryStatus,
    attempts: Number(row.attempts),
    createdAt: time(row.created_at)
  }
  if (row.last_attempt_at !== null) delivery.lastAttemptAt = time(row.last_attempt_at)
  if (row.last_status_code !== null) delivery.lastStatusCode = Number(row.last_status_code)
  if (row.last_error !== null) delivery.lastError = row.last_error
  if (row.next_attempt_at !== null && row.status === 'pending') delivery.nextAttemptAt = time(row.next_attempt_at)
  return delivery
}

/** The secrets an attempt signs with: the current one, and the replaced one until it expires. */
export function activeSecrets (secret: string, previous: string | null, previousUntil: Int | null, now: number): string[] {
  return previous !== null && previousUntil !== null && Number(previousUntil) > now ? [secret, previous] : [secret]
}

/** How long a recorded error may be: enough to tell what happened, never a receiver's essay. */
/** A claimed delivery joined with its subscription, as both stores' claim queries answer it. */
export interface ClaimRow {
  id: bigint
  subscription_id: bigint
  message_id: string
  event_type: string
  payload: string
  attempts: Int
  url: string
  secret: string
  previous_secret: string | null
  previous_secret_until: Int | null
  request_id: string | null
  traceparent: string | null
}

/** What one attempt needs, from a claim row: the secrets still signing at `now`. */
export function toClaimed (row: ClaimRow, now: number): ClaimedDelivery {
  return {
    id: row.id,
    subscriptionId: row.subscription_id,
    messageId: row.message_id,
    eventType: row.event_type as WebhookEventType,
    payload: row.payload,
    attempts: Number(row.attempts),
    url: row.url,
    secrets: activeSecrets(row.secret, row.previous_secret, row.previous_secret_until, now),
    origin: toOrigin(row)
  }
}

/** The origin columns of a delivery row (null where unknown). */
export function toOrigin (row: { request_id: string | null, traceparent: string | null }): EventOrigin {
  return {
    ...(row.request_id !== null && { requestId: row.request_id }),
    ...(row.traceparent !== null && { traceparent: row.traceparent })
  }
}

export const MAX_ERROR_LENGTH = 500

export const truncateError = (message: string): string =>
  message.length <= MAX_ERROR_LENGTH ? message : `${message.slice(0, MAX_ERROR_LENGTH - 1)}…`
