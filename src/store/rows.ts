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

export function toPlant (row: PlantRow): Plant {
  const createdAt = isoTime(Number(row.created_at))
  // A plant never changed has equal timestamps: format once.
  const updatedAt = row.updated_at === row.created_at ? createdAt : isoTime(Number(row.updated_at))
  const plant: Plant = { id: row.id, name: row.name, createdAt, updatedAt }
  if (row.tag !== null) plant.tag = row.tag
  return plant
}

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
