import { strongEtag, type ColumnsDeclaration, type Repository, type ResourceDefinition } from './definition.js'
import {
  NewPlantSchema, PLANT_EXAMPLE, PlantListQuerySchema, PlantListSchema, PlantParamsSchema, PlantPatchSchema,
  PlantSchema, PlantUpdateSchema, type Plant
} from '../schemas/plant.js'
import { LIST_LIMIT_DEFAULT } from '../schemas/paging.js'
import { isoTime } from '../store/iso-time.js'

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

export interface PlantTypes {
  item: Plant
  create: NewPlant
  replace: Omit<NewPlant, 'id'>
  changes: PlantChanges
  query: ListQuery
}

export type PlantRepository = Repository<PlantTypes>

function plantOf (id: bigint, name: string, tag: string | null, createdMs: number, updatedMs: number): Plant {
  const createdAt = isoTime(createdMs)
  // A plant never changed has equal timestamps: format once.
  const updatedAt = updatedMs === createdMs ? createdAt : isoTime(updatedMs)
  const plant: Plant = { id, name, createdAt, updatedAt }
  if (tag !== null) plant.tag = tag
  return plant
}

/** `updatedAt` changes on every write, so the tag does too. */
export const plantEtag = (plant: Plant): string =>
  strongEtag([
    String(plant.id), plant.name, plant.tag === undefined ? '' : `#${plant.tag}`, plant.createdAt, plant.updatedAt
  ])

/** Field by field: a bigint id, which JSON.stringify refuses, must reach the receiver as the API's JSON integer. */
export function plantJson (plant: Plant): string {
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`
  return `{"id":${plant.id.toString()},"name":${JSON.stringify(plant.name)}${tag},` +
    `"createdAt":${JSON.stringify(plant.createdAt)},"updatedAt":${JSON.stringify(plant.updatedAt)}}`
}

interface PlantSchemas {
  representation: typeof PlantSchema
  list: typeof PlantListSchema
  create: typeof NewPlantSchema
  replace: typeof PlantUpdateSchema
  patch: typeof PlantPatchSchema
  params: typeof PlantParamsSchema
  listQuery: typeof PlantListQuerySchema
}

/** The plants table's own columns (besides id, created_at and updated_at). */
const PLANT_TABLE = {
  name: { kind: 'text', nullable: false },
  tag: { kind: 'text', nullable: true }
} as const satisfies ColumnsDeclaration

export const PLANTS: ResourceDefinition<'plants', 'plant', PlantTypes, PlantSchemas, typeof PLANT_TABLE> = {
  collection: 'plants',
  name: 'plant',
  title: 'Plant',
  etag: plantEtag,
  json: plantJson,
  example: PLANT_EXAMPLE,
  schemas: {
    representation: PlantSchema,
    list: PlantListSchema,
    create: NewPlantSchema,
    replace: PlantUpdateSchema,
    patch: PlantPatchSchema,
    params: PlantParamsSchema,
    listQuery: PlantListQuerySchema
  },
  texts: {
    tag: 'The plants resource',
    list: {
      description: 'Plants ordered by id, at most `limit` of them. When more follow, a `Link: <…>; rel="next"` ' +
        'header gives the next page (keyset pagination on `after`: a deep page costs what the first one does). ' +
        '`tag` keeps only plants with exactly that tag.',
      badRequest: 'A query parameter is invalid or unknown (limit outside 1..100 or not a canonical integer, after ' +
        'not an int64, tag empty or too long), or a name or value is not percent-encoded UTF-8'
    },
    create: {
      description: 'Creates a plant and answers 201 with it and `Location: /plants/{id}`. `id` is optional (clients ' +
        'of the original `NewPlant`, which required it, keep working): when given it must be free, else 409. ' +
        'With an `Idempotency-Key`, a retry of the same request within 24 hours answers the first 201 again.',
      badRequest: 'The body is not a valid NewPlant (the message names the field; an id must be written without a ' +
        'fraction or exponent), or the Idempotency-Key is malformed'
    },
    replace: {
      description: 'Replaces the name and tag of the plant with this id (a missing tag clears it); never creates a ' +
        'plant.'
    },
    update: {
      description: 'Applies a JSON merge patch (RFC 7396) to the plant with this id: a field that is absent is kept, ' +
        '`"tag": null` clears the tag (the name cannot be cleared). Sent as `application/merge-patch+json` or plain ' +
        'JSON.'
    },
    scopes: { read: 'List and get plants', write: 'Create, replace, update and delete plants' },
    events: {
      created: 'A plant was created; `data` is the plant',
      updated: 'A plant was replaced or updated; `data` is the plant after the change',
      deleted: 'A plant was deleted; `data` is the plant as it was'
    }
  },
  storage: {
    table: 'plants',
    columns: PLANT_TABLE,
    filters: [{ column: 'tag', value: (query) => query.tag }],
    create: ({ name, tag }) => ({ name, tag: tag ?? null }),
    replace: ({ name, tag }) => ({ name, tag: tag ?? null }),
    update: (current, { name, tag }) => ({ name: name ?? current.name, tag: tag === undefined ? current.tag : tag }),
    item: ({ id, values, createdAt, updatedAt }) => plantOf(id, values.name, values.tag, createdAt, updatedAt)
  },
  fromCreate: ({ id, name, tag }) => ({
    ...(id !== undefined && { id: BigInt(id) }), name: name.trim(), ...(tag !== undefined && { tag })
  }),
  fromReplace: ({ name, tag }) => ({ name: name.trim(), ...(tag !== undefined && { tag }) }),
  fromPatch: ({ name, tag }) => ({
    ...(name !== undefined && { name: name.trim() }), ...(tag !== undefined && { tag })
  }),
  idempotencyFields: (plant) => [plant.id, plant.name, plant.tag],
  fromListQuery: ({ limit = LIST_LIMIT_DEFAULT, after, tag }) => ({
    limit,
    ...(after !== undefined && { after: BigInt(after) }),
    ...(tag !== undefined && { tag })
  }),
  filterQuery: ({ tag }) => tag === undefined ? '' : `&tag=${encodeURIComponent(tag)}`
}
