import { idempotencyKeyReused, notFound, preconditionFailed } from '../errors.js'
import type { Resource } from '../resource.js'
import type { IdempotencyKey, IfMatch } from './store.js'

/** With If-Match, a missing row fails the precondition (RFC 9110 §13.1.1). */
export function writableRow<Row, T> (resource: Resource<T>, id: bigint, row: Row | undefined | null, ifMatch: IfMatch | undefined, represent: (row: Row) => T): Row {
  if (row === undefined || row === null) throw ifMatch === undefined ? notFound(resource, id) : preconditionFailed(resource, id)
  if (ifMatch !== undefined && ifMatch !== '*' && !ifMatch.includes(resource.etag(represent(row)))) throw preconditionFailed(resource, id)
  return row
}

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

/** Keys created at or before this time are expired. */
export const idempotencyCutoff = (now: number): number => now - IDEMPOTENCY_TTL_MS

/**
 * A keyed create finds its unexpired key; when found, this replays or refuses; else the store
 * expires old keys, inserts and saves the key with what it created.
 */
export function replayOf<Row extends { fingerprint: string }, T> (earlier: Row | undefined, key: IdempotencyKey, remembered: (row: Row) => T): T | undefined {
  if (earlier === undefined) return undefined
  if (earlier.fingerprint !== key.fingerprint) throw idempotencyKeyReused()
  return remembered(earlier)
}

/** Draws a server-assigned id: each failed attempt moves the sequence past the taken ids it met, so this ends within a round or two. */
export async function drawFreeId<T> (attempt: () => Promise<T | undefined>, skipTaken: () => Promise<unknown>): Promise<T> {
  for (let round = 0; round < 10; round++) {
    const made = await attempt()
    if (made !== undefined) return made
    await skipTaken()
  }
  throw new Error('could not draw a free id')
}
