import type { Plant } from '../schemas/plant.js'
import type { EventOrigin } from '../webhooks/events.js'
import type { WebhookStore } from '../webhooks/store.js'

/**
 * 2^53 - 1, the largest integer a JavaScript client holds exactly; past it a create without an id
 * fails with `ids-exhausted` rather than hand out an id a client would round.
 */
export const MAX_ASSIGNED_ID = 9007199254740991n

/** Stored exactly as given; the schemas exclude NUL and lone surrogates, which the stores cannot store. */
export interface NewPlant {
  id?: bigint
  name: string
  tag?: string
}

/** `tag: null` clears the tag. */
export interface PlantChanges {
  name?: string
  tag?: string | null
}

export interface ListQuery {
  limit: number
  after?: bigint
  tag?: string
}

export interface ListPage {
  plants: Plant[]
  hasMore: boolean
}

/** `*`: any current plant. Checked inside the write's transaction, so no other write can slip in between. */
export type IfMatch = '*' | readonly string[]

export interface IdempotencyKey {
  /** A hash of the client's token, never the token, so clients cannot collide. */
  scope: string
  key: string
  fingerprint: string
}

export const newerSchemaProblem = (version: number, known: number): string =>
  `the database schema (version ${version}) is newer than this plant-store (${known})`

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

export interface CreateResult {
  plant: Plant
  /** True when an idempotency key matched an earlier create: `plant` is that first result. */
  replayed: boolean
}

/** Told once per change of the store's state, not per request. */
export interface StoreLog {
  error: (details: object, message: string) => void
  info: (details: object, message: string) => void
}

/** The contract every storage backend fulfils. A store knows nothing of HTTP: it rejects with a ServiceError code. */
export interface PlantStore {
  ping(): Promise<void>
  list(query: ListQuery): Promise<ListPage>
  get(id: bigint): Promise<Plant | undefined>
  create(plant: NewPlant, idempotency?: IdempotencyKey, origin?: EventOrigin): Promise<CreateResult>
  replace(id: bigint, plant: Omit<NewPlant, 'id'>, ifMatch?: IfMatch, origin?: EventOrigin): Promise<Plant>
  update(id: bigint, changes: PlantChanges, ifMatch?: IfMatch, origin?: EventOrigin): Promise<Plant>
  delete(id: bigint, ifMatch?: IfMatch, origin?: EventOrigin): Promise<Plant>
  /** Every write above also writes its event in its own transaction: an answered write has it durable. */
  readonly webhooks: WebhookStore
  /** Closes the webhook store too: stop its dispatcher first. */
  close(): Promise<void>
}
