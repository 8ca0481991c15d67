import { plantEtag } from '../etag.js'
import type { Resource } from '../resource.js'
import type { Plant } from '../schemas/plant.js'
import type { EventOrigin } from '../webhooks/events.js'
import type { IdempotencyKey, IfMatch } from './store.js'

/** The plants resource, as the resource-neutral write rules name and tag it. */
export const PLANT: Resource<Plant> = { title: 'Plant', etag: plantEtag }

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

export interface CreateResult {
  plant: Plant
  /** True when an idempotency key matched an earlier create: `plant` is that first result. */
  replayed: boolean
}

/**
 * The plants repository, the same contract on every store. It rejects with a ServiceError code,
 * never an HTTP status; every write also writes its event in its own transaction.
 */
export interface PlantRepository {
  list(query: ListQuery): Promise<ListPage>
  get(id: bigint): Promise<Plant | undefined>
  create(plant: NewPlant, idempotency?: IdempotencyKey, origin?: EventOrigin): Promise<CreateResult>
  replace(id: bigint, plant: Omit<NewPlant, 'id'>, ifMatch?: IfMatch, origin?: EventOrigin): Promise<Plant>
  update(id: bigint, changes: PlantChanges, ifMatch?: IfMatch, origin?: EventOrigin): Promise<Plant>
  delete(id: bigint, ifMatch?: IfMatch, origin?: EventOrigin): Promise<Plant>
}
