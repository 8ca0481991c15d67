import type { Plant } from '../schemas/plant.js'
import { plantEtag } from '../etag.js'
import { plantNotFound, plantPreconditionFailed } from '../errors.js'
import { isoTime } from './iso-time.js'
import type { IfMatch } from './store.js'

/** A plant as both stores keep it: int64 id and millisecond timestamps as bigints. */
export interface PlantRow {
  id: bigint
  name: string
  tag: string | null
  created_at: bigint
  updated_at: bigint
}

/** An idempotency key with the plant it first answered (a replay returns exactly that). */
export interface IdempotencyRow extends Omit<PlantRow, 'id'> {
  fingerprint: string
  plant_id: bigint
}

/**
 * A plant's columns as an array, in the order of PLANT_COLUMNS: what the read statements fetch,
 * since a row as an array costs a fraction of a row as an object (one property set per column),
 * which was most of a list page's fetch (README, "Performance").
 */
export type PlantColumns = readonly [id: bigint, name: string, tag: string | null, created_at: bigint, updated_at: bigint]

/** The column list of PlantColumns. */
export const PLANT_COLUMNS = 'id, name, tag, created_at, updated_at'

function plantOf (id: bigint, name: string, tag: string | null, createdMs: bigint, updatedMs: bigint): Plant {
  const createdAt = isoTime(Number(createdMs))
  // A plant never changed has equal timestamps: format once.
  const updatedAt = updatedMs === createdMs ? createdAt : isoTime(Number(updatedMs))
  const plant: Plant = { id, name, createdAt, updatedAt }
  if (tag !== null) plant.tag = tag
  return plant
}

export const toPlant = (row: PlantRow): Plant => plantOf(row.id, row.name, row.tag, row.created_at, row.updated_at)

export const columnsToPlant = (columns: PlantColumns): Plant => plantOf(columns[0], columns[1], columns[2], columns[3], columns[4])

/** The plant an idempotency key remembers. */
export const rememberedPlant = (row: IdempotencyRow): Plant =>
  toPlant({ id: row.plant_id, name: row.name, tag: row.tag, created_at: row.created_at, updated_at: row.updated_at })

/**
 * The row a write may change, checked inside the write's transaction: `not-found` when there is
 * none, `precondition-failed` when If-Match does not hold. With If-Match, a missing plant fails
 * the precondition (it cannot hold without a current representation, RFC 9110 §13.1.1).
 */
export function writableRow<R extends PlantRow | undefined> (id: bigint, row: R, ifMatch: IfMatch | undefined): NonNullable<R> {
  if (row === undefined || row === null) throw ifMatch === undefined ? plantNotFound(id) : plantPreconditionFailed(id)
  if (ifMatch !== undefined && ifMatch !== '*' && !ifMatch.includes(plantEtag(toPlant(row)))) throw plantPreconditionFailed(id)
  return row as NonNullable<R>
}
