import { idempotencyKeyReused, notFound, preconditionFailed } from '../errors.js'
import type { Resource } from '../resource.js'
import type { IdempotencyKey, IfMatch } from './store.js'

/**
 * The write rules every repository shares, decided here once; each store's dialect module only
 * reads and writes the rows.
 */

/** With If-Match, a missing row fails the precondition (RFC 9110 §13.1.1). */
export function writableRow<Row, T> (resource: Resource<T>, id: bigint, row: Row | undefined | null, ifMatch: IfMatch | undefined, represent: (row: Row) => T): Row {
  if (row === undefined || row === null) throw ifMatch === undefined ? notFound(resource, id) : preconditionFailed(resource, id)
  if (ifMatch !== undefined && ifMatch !== '*' && !ifMatch.includes(resource.etag(represent(row)))) throw preconditionFailed(resource, id)
  return row
}

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

/** Keys created at or before this time are expired: never matched, and deleted by the next keyed create. */
export const idempotencyCutoff = (now: number): number => now - IDEMPOTENCY_TTL_MS

/**
 * A keyed create, in its transaction, runs: find the unexpired key (after the cutoff); when found,
 * this decides (replay its first result, or refuse a different body); else expire old keys, insert,
 * and save the key with what was created. Same-key creates are serialized by each store's lock.
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
