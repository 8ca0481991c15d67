import type { Plant } from '../schemas/plant.js'
import type { EventOrigin } from '../webhooks/events.js'
import type { WebhookStore } from '../webhooks/store.js'

/**
 * The largest id a store assigns itself: 2^53 - 1, the largest integer a JavaScript client holds
 * exactly. Server-assigned ids stay within 1..2^53 - 1 whatever ids clients choose: the sequence
 * skips ids that are or were taken and is never pushed up by them; past the top, a create without
 * an id fails with `ids-exhausted` rather than hand out an id a client would round.
 */
export const MAX_ASSIGNED_ID = 9007199254740991n

/**
 * What a client sends to create a plant; the store assigns `id` when it is absent. Names and tags
 * are stored exactly as given: they must be valid Unicode text without NUL (U+0000) or unpaired
 * surrogates, which the API's schemas guarantee (PostgreSQL cannot store NUL, and neither store
 * can store a lone surrogate as UTF-8).
 */
export interface NewPlant {
  id?: bigint
  name: string
  tag?: string
}

/** A change to a plant: a missing field is kept, `tag: null` clears the tag. */
export interface PlantChanges {
  name?: string
  tag?: string | null
}

export interface ListQuery {
  limit: number
  /** Only plants whose id is greater than this (keyset cursor). */
  after?: bigint
  /** Only plants with exactly this tag. */
  tag?: string
}

export interface ListPage {
  plants: Plant[]
  /** True when at least one more plant follows the last one returned. */
  hasMore: boolean
}

/**
 * An `If-Match` precondition: the write goes ahead only when the plant exists and, for a list, its
 * current ETag is one of these (`*`: any current plant). Checked inside the write's transaction, so
 * no other write can slip in between.
 */
export type IfMatch = '*' | readonly string[]

/**
 * An `Idempotency-Key` on a create: a retry with the same scope, key and fingerprint gets the
 * first plant back and creates nothing; the same key with another fingerprint is refused.
 */
export interface IdempotencyKey {
  /** Whose key it is (a hash of the client's token, never the token), so clients cannot collide. */
  scope: string
  key: string
  /** A hash of the request body. */
  fingerprint: string
}

/** The one wording, on every store, of a database that a newer plant-store has migrated. */
export const newerSchemaProblem = (version: number, known: number): string =>
  `the database schema (version ${version}) is newer than this plant-store (${known})`

/** How long an idempotency key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

export interface CreateResult {
  plant: Plant
  /** True when an idempotency key matched an earlier create: `plant` is that first result. */
  replayed: boolean
}

/** Where a store reports a change of its state (the app passes its logger): once per change, not per request. */
export interface StoreLog {
  error: (details: object, message: string) => void
  info: (details: object, message: string) => void
}

/**
 * The one contract every storage backend fulfils; routes only ever talk to this. A store knows
 * nothing of HTTP: a write that cannot be done rejects with a ServiceError whose code says why
 * (`not-found`, `precondition-failed`, `conflict`, `idempotency-key-reused`, `ids-exhausted`;
 * `unavailable` or `storage-full` when the database cannot be reached or cannot store it).
 * Every write resolves to the plant it wrote: as it is now, or, for a delete, as it was.
 */
export interface PlantStore {
  /** Resolves when the database answers and can take writes; rejects (a ServiceError) otherwise. */
  ping(): Promise<void>
  list(query: ListQuery): Promise<ListPage>
  get(id: bigint): Promise<Plant | undefined>
  /**
   * `conflict` when the chosen id is taken, `idempotency-key-reused` when the key was used in the
   * last 24 hours for another body, `ids-exhausted` when no id is given and none is left to assign
   * (see MAX_ASSIGNED_ID). Key and plant are written together.
   * Every write takes the `origin` its webhook event records (the request that caused it).
   */
  create(plant: NewPlant, idempotency?: IdempotencyKey, origin?: EventOrigin): Promise<CreateResult>
  /** Replaces name and tag (a missing tag clears it). */
  replace(id: bigint, plant: Omit<NewPlant, 'id'>, ifMatch?: IfMatch, origin?: EventOrigin): Promise<Plant>
  update(id: bigint, changes: PlantChanges, ifMatch?: IfMatch, origin?: EventOrigin): Promise<Plant>
  delete(id: bigint, ifMatch?: IfMatch, origin?: EventOrigin): Promise<Plant>
  /**
   * The webhook subscriptions and deliveries on the same database. Every write above also writes its
   * event's deliveries (`plant.created`, `plant.updated`, `plant.deleted`) in its own transaction: a
   * write that is answered has its deliveries durable; a refused write or an idempotent replay writes none.
   */
  readonly webhooks: WebhookStore
  /** Closes the webhook store too: stop its dispatcher first. */
  close(): Promise<void>
}
