import { isoTime } from '../store/iso-time.js'
import { RESOURCE_CHANGES, type WebhookEventType } from './events.js'
import type {
  ClaimedDelivery, DeliveryAttempt, DeliveryDetail, DeliveryStatus, WebhookDelivery, WebhookSubscription
} from './store-contract.js'

/** Integers as the drivers hand them over: bigint (SQLite safe integers, int8) or number (int4). */
export type Int = bigint | number

/** A boolean as either driver reads it: SQLite's 0 and 1, PostgreSQL's boolean. */
export const flag = (value: unknown): boolean => value === true || value === 1n || value === 1

export interface SubscriptionRow {
  id: bigint
  url: string
  /** SQLite: the names between spaces; PostgreSQL: text[]. */
  events: string | string[]
  description: string | null
  disabled: unknown
  secret: string
  previous_secrets: string
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

/** `<resource>.<change>`: any resource's, as a store serves any; the app's service keeps the ones it serves. */
const RESOURCE_EVENT_TYPE = new RegExp(`^[^.]+\\.(?:${RESOURCE_CHANGES.join('|')})$`)

/** Resource event types only: another kind a newer version stored is left out rather than passed on unchecked. */
const toEventTypes = (names: readonly string[]): WebhookEventType[] =>
  names.filter((name): name is WebhookEventType => RESOURCE_EVENT_TYPE.test(name))

export function toSubscription (row: SubscriptionRow): WebhookSubscription {
  const subscription: WebhookSubscription = {
    id: row.id,
    url: row.url,
    events: toEventTypes(typeof row.events === 'string' ? row.events.split(' ') : row.events),
    disabled: flag(row.disabled),
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

/** Secrets a rotation replaced, newest first, each with when it stops signing (epoch ms). */
type PreviousSecrets = Array<[secret: string, until: number]>

/** At most this many replaced secrets keep signing: each costs every delivery a signature. */
const MAX_PREVIOUS_SECRETS = 10

/** The previous_secrets column (a JSON array of [secret, until]) still signing at `now`; anything else is none. */
function unexpiredSecrets (json: string, now: number): PreviousSecrets {
  const parsed: unknown = JSON.parse(json)
  if (!Array.isArray(parsed)) return []
  return parsed.filter((entry): entry is [string, number] =>
    Array.isArray(entry) && typeof entry[0] === 'string' && typeof entry[1] === 'number' && entry[1] > now)
}

/** What a rotation leaves: `current` until `until`, then the earlier ones not yet expired at `now`. */
export function afterRotation (current: string, until: number, previousJson: string, now: number): string {
  return JSON.stringify([[current, until], ...unexpiredSecrets(previousJson, now)].slice(0, MAX_PREVIOUS_SECRETS))
}

export interface DeliveryDetailRow extends DeliveryRow {
  message_id: string
  payload: string
}

export interface AttemptRow {
  at: Int
  duration_ms: Int
  status_code: Int | null
  error: string | null
  response_body: string | null
}

export function toDeliveryDetail (row: DeliveryDetailRow, attempts: readonly AttemptRow[]): DeliveryDetail {
  return { ...toDelivery(row), webhookId: row.message_id, payload: row.payload, attemptLog: attempts.map(toAttempt) }
}

function toAttempt (row: AttemptRow): DeliveryAttempt {
  const attempt: DeliveryAttempt = { at: time(row.at), durationMs: Number(row.duration_ms) }
  if (row.status_code !== null) attempt.statusCode = Number(row.status_code)
  if (row.error !== null) attempt.error = row.error
  if (row.response_body !== null) attempt.responseBody = row.response_body
  return attempt
}

export function activeSecrets (secret: string, previousJson: string, now: number): string[] {
  return [secret, ...unexpiredSecrets(previousJson, now).map(([previous]) => previous)]
}

/** A claimed delivery joined with its subscription, as both stores' claim queries answer it. */
export interface ClaimRow {
  id: bigint
  subscription_id: bigint
  owner: string
  message_id: string
  event_type: string
  payload: string
  attempts: Int
  url: string
  secret: string
  previous_secrets: string
  request_id: string | null
  traceparent: string | null
}

/** What one attempt needs: the secrets still signing at `now`. */
export function toClaimed (row: ClaimRow, now: number): ClaimedDelivery {
  return {
    id: row.id,
    subscriptionId: row.subscription_id,
    owner: row.owner,
    messageId: row.message_id,
    eventType: row.event_type as WebhookEventType,
    payload: row.payload,
    attempts: Number(row.attempts),
    url: row.url,
    secrets: activeSecrets(row.secret, row.previous_secrets, now),
    origin: {
      ...(row.request_id !== null && { requestId: row.request_id }),
      ...(row.traceparent !== null && { traceparent: row.traceparent })
    }
  }
}

/** How long a recorded error may be: enough to tell what happened, never a receiver's essay. */
const MAX_ERROR_LENGTH = 500

const truncateError = (message: string): string =>
  message.length <= MAX_ERROR_LENGTH ? message : `${message.slice(0, MAX_ERROR_LENGTH - 1)}…`

/** PostgreSQL's text holds no zero byte: it reads as U+FFFD on both stores, as a byte that is not UTF-8 does. */
export const storableText = (text: string): string => text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text

export function attemptTexts (
  done: { error?: string, responseBody?: string }
): { error: string | null, body: string | null } {
  return {
    error: done.error === undefined ? null : truncateError(storableText(done.error)),
    body: done.responseBody === undefined ? null : storableText(done.responseBody)
  }
}
