import type { Plant } from '../schemas/plant.js'
import { isoTime } from './iso-time.js'

export interface PlantRow {
  id: bigint
  name: string
  tag: string | null
  created_at: bigint
  updated_at: bigint
}

export interface IdempotencyRow extends Omit<PlantRow, 'id'> {
  fingerprint: string
  plant_id: bigint
}

/** Reads fetch rows as arrays, not objects: see docs/performance.md#what-the-measurements-decided. */
export type PlantColumns = readonly [id: bigint, name: string, tag: string | null, created_at: bigint, updated_at: bigint]

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

export const rememberedPlant = (row: IdempotencyRow): Plant =>
  toPlant({ id: row.plant_id, name: row.name, tag: row.tag, created_at: row.created_at, updated_at: row.updated_at })
