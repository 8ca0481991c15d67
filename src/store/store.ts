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

/** The one contract every storage backend fulfils; routes only ever talk to this. */
export interface PlantStore {
  /** Resolves when the database answers; rejects otherwise. */
  ping(): Promise<void>
  list(query: ListQuery): Promise<ListPage>
  get(id: bigint): Promise<Plant | undefined>
  /** Rejects with PlantConflictError when the chosen id is taken. */
  create(plant: NewPlant): Promise<Plant>
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
