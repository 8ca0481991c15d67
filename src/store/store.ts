import type { Plant } from '../schemas/plant.js'

/** What a client sends to create a plant; the store assigns `id` when it is absent. */
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
 * An `If-Match` precondition: the write goes ahead only when the plant's current ETag is one of
 * these. Checked inside the write's transaction, so no other write can slip in between.
 */
export type IfMatch = readonly string[]

export type WriteResult =
  | { status: 'ok', plant: Plant }
  | { status: 'not-found' }
  | { status: 'precondition-failed' }

export type DeleteResult = 'deleted' | 'not-found' | 'precondition-failed'

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

/** How long an idempotency key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

export interface CreateResult {
  plant: Plant
  /** True when an idempotency key matched an earlier create: `plant` is that first result. */
  replayed: boolean
}

/** The one contract every storage backend fulfils; routes only ever talk to this. */
export interface PlantStore {
  /** Resolves when the database answers; rejects otherwise. */
  ping(): Promise<void>
  list(query: ListQuery): Promise<ListPage>
  get(id: bigint): Promise<Plant | undefined>
  /**
   * Rejects with PlantConflictError when the chosen id is taken, and with IdempotencyKeyReuseError
   * when the key was used in the last 24 hours for another body. Key and plant are written together.
   */
  create(plant: NewPlant, idempotency?: IdempotencyKey): Promise<CreateResult>
  /** Replaces name and tag (a missing tag clears it). */
  replace(id: bigint, plant: Omit<NewPlant, 'id'>, ifMatch?: IfMatch): Promise<WriteResult>
  update(id: bigint, changes: PlantChanges, ifMatch?: IfMatch): Promise<WriteResult>
  delete(id: bigint, ifMatch?: IfMatch): Promise<DeleteResult>
  close(): Promise<void>
}

export class PlantConflictError extends Error {
  override name = 'PlantConflictError'
  constructor (readonly id: bigint) {
    super(`Plant ${id} already exists`)
  }
}

export class IdempotencyKeyReuseError extends Error {
  override name = 'IdempotencyKeyReuseError'
  constructor () {
    super('This Idempotency-Key was already used with a different request body')
  }
}

/** Raised at start-up when the database is not a plant-store database, or is newer than this code. */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError'
}
