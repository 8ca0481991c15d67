import { Type, type Static } from '@sinclair/typebox'
import { int64IdSchema, int64StringSchema } from './int64.js'
import { cursorSchema, listLimitSchema } from './paging.js'
import { ref } from './ref.js'
import { STORABLE_TEXT, STORABLE_TEXT_RULE, trimmedTextSchema } from './text.js'

export const PlantParamsSchema = Type.Object({ id: int64StringSchema() }, { additionalProperties: false })

const NAME_MAX_LENGTH = 100
const TAG_MAX_LENGTH = 50

const PlantNameInputSchema = trimmedTextSchema('The plant name', NAME_MAX_LENGTH, 'Monstera')

const tagOptions = {
  minLength: 1,
  maxLength: TAG_MAX_LENGTH,
  pattern: STORABLE_TEXT,
  description: `A free-form tag, 1 to ${TAG_MAX_LENGTH} characters; ${STORABLE_TEXT_RULE}`,
  examples: ['tropical']
}
const PlantTagSchema = Type.String(tagOptions)

export const PLANT_EXAMPLE = {
  id: 1,
  name: 'Monstera',
  tag: 'tropical',
  createdAt: '2026-01-02T03:04:05.678Z',
  updatedAt: '2026-01-02T03:04:05.678Z'
}

export const PlantSchema = Type.Object(
  {
    id: int64IdSchema('The plant identifier (signed 64-bit)'),
    name: Type.String({
      minLength: 1,
      maxLength: NAME_MAX_LENGTH,
      description: 'The plant name',
      examples: ['Monstera']
    }),
    tag: Type.Optional(PlantTagSchema),
    createdAt: Type.String({
      format: 'date-time',
      description: 'When the plant was created; never changes',
      examples: ['2026-01-02T03:04:05.678Z']
    }),
    updatedAt: Type.String({
      format: 'date-time',
      description: 'When the plant was last changed; changes on every write',
      examples: ['2026-01-02T03:04:05.678Z']
    })
  },
  { $id: 'Plant', additionalProperties: false, description: 'A plant', examples: [PLANT_EXAMPLE] }
)
export type Plant = Static<typeof PlantSchema>

/** A larger number has already been rounded by the JSON parser: refused rather than stored as another id. */
const JSON_SAFE_ID_MAX = Number.MAX_SAFE_INTEGER

export const NewPlantSchema = Type.Object(
  {
    id: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: JSON_SAFE_ID_MAX,
        format: 'int64',
        description:
          'The id to give the plant (optional; the store assigns the next one when absent). ' +
          'A positive integer of at most 2^53 - 1, so that JSON carries it exactly, written as an integer ' +
          '(a fraction or an exponent, even `1.0` or `1e3`, is a 400); 409 when taken.',
        examples: [42]
      })
    ),
    name: PlantNameInputSchema,
    tag: Type.Optional(PlantTagSchema)
  },
  {
    $id: 'NewPlant',
    additionalProperties: false,
    description: 'A plant to create',
    examples: [{ name: 'Monstera', tag: 'tropical' }]
  }
)

export const PlantUpdateSchema = Type.Object(
  {
    name: PlantNameInputSchema,
    tag: Type.Optional(PlantTagSchema)
  },
  {
    $id: 'PlantUpdate',
    additionalProperties: false,
    description: 'A full replacement of a plant: a missing tag clears it',
    examples: [{ name: 'Monstera deliciosa', tag: 'tropical' }]
  }
)

export const PlantPatchSchema = Type.Object(
  {
    name: Type.Optional(PlantNameInputSchema),
    tag: Type.Optional(
      Type.Unsafe<string | null>({
        ...tagOptions,
        type: ['string', 'null'],
        description: `${tagOptions.description}; null clears it`
      })
    )
  },
  {
    $id: 'PlantPatch',
    additionalProperties: false,
    description: 'A JSON merge patch (RFC 7396) of a plant: a missing field is kept, `"tag": null` clears the tag',
    examples: [{ tag: null }]
  }
)

export const PlantListSchema = Type.Array(ref(PlantSchema), {
  $id: 'PlantList',
  description: 'Plants ordered by id',
  examples: [[PLANT_EXAMPLE]]
})

export { LIST_LIMIT_DEFAULT } from './paging.js'

export const PlantListQuerySchema = Type.Object(
  {
    limit: listLimitSchema('plants'),
    after: cursorSchema('Cursor: only plants with a larger id'),
    tag: Type.Optional(Type.String({ ...tagOptions, description: 'Only plants with exactly this tag' }))
  },
  { additionalProperties: false }
)
