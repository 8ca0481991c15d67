import { idempotencyKeyReused, notFound, preconditionFailed } from '../lib/errors.js'
import type { CreateResult, IfMatch, Resource } from '../resources/definition.js'
import type { IdempotencyKey } from '../resources/idempotency.js'

/** With If-Match, a missing row fails the precondition (RFC 9110 §13.1.1). */
export function writableRow<Row, T> (
  resource: Resource<T>, id: bigint, row: Row | undefined | null, ifMatch: IfMatch | undefined,
  represent: (row: Row) => T
): Row {
  if (row === undefined || row === null) {
    throw ifMatch === undefined ? notFound(resource, id) : preconditionFailed(resource, id)
  }
  if (ifMatch !== undefined && ifMatch !== '*' && !ifMatch.includes(resource.etag(represent(row)))) {
    throw preconditionFailed(resource, id)
  }
  return row
}

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

/** A step's answer: SQLite's steps run synchronously inside its transaction, PostgreSQL's are awaited. */
type MaybeAsync<T> = T | Promise<T>

const then = <A, B>(value: MaybeAsync<A>, next: (value: A) => MaybeAsync<B>): MaybeAsync<B> =>
  value instanceof Promise ? value.then(next) : next(value)

/** A create's steps in the dialect's own transaction; `created` writes the event and makes the representation. */
export interface CreateSteps<Earlier extends { fingerprint: string }, Row, T> {
  /** The key's unexpired row (PostgreSQL locks the key first, so same-key creates queue). */
  findKey: (key: IdempotencyKey, cutoff: number) => MaybeAsync<Earlier | undefined>
  remembered: (earlier: Earlier) => T
  expireKeys: (cutoff: number) => MaybeAsync<unknown>
  insert: () => MaybeAsync<Row>
  saveKey: (key: IdempotencyKey, row: Row) => MaybeAsync<unknown>
  created: (row: Row) => MaybeAsync<T>
}

/** An unexpired key replays what it created, or is refused with another fingerprint; then `admit` if new. */
export function createOnce<Earlier extends { fingerprint: string }, Row, T> (
  key: IdempotencyKey | undefined, now: number, steps: CreateSteps<Earlier, Row, T>, admit?: () => void
): MaybeAsync<CreateResult<T>> {
  const insert = (): MaybeAsync<CreateResult<T>> => then(steps.insert(), (row) =>
    then(key === undefined ? undefined : steps.saveKey(key, row), () =>
      then(steps.created(row), (item) => ({ item, replayed: false }))))
  if (key === undefined) {
    admit?.()
    return insert()
  }
  // Keys created at or before the cutoff are expired.
  const cutoff = now - IDEMPOTENCY_TTL_MS
  return then(steps.findKey(key, cutoff), (earlier) => {
    if (earlier !== undefined) {
      if (earlier.fingerprint !== key.fingerprint) throw idempotencyKeyReused()
      return { item: steps.remembered(earlier), replayed: true }
    }
    admit?.()
    return then(steps.expireKeys(cutoff), insert)
  })
}

/** For SQLite's synchronous transactions: a step that returned a promise would have run outside it. */
export function settled<T> (value: MaybeAsync<T>): T {
  if (value instanceof Promise) throw new Error('a synchronous store step returned a promise')
  return value
}

/** Each failed attempt moves the sequence past the taken ids it met, so this ends within a round or two. */
export async function drawFreeId<T> (
  attempt: () => Promise<T | undefined>, skipTaken: () => Promise<unknown>
): Promise<T> {
  for (let round = 0; round < 10; round++) {
    const made = await attempt()
    if (made !== undefined) return made
    await skipTaken()
  }
  throw new Error('could not draw a free id')
}
