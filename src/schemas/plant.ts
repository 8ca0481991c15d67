import { Type, type Static } from '@sinclair/typebox'

/** An int64 plant id in a body: a JSON integer, serialized exactly from a bigint. */
export const PlantIdSchema = Type.Unsafe<bigint>({
  type: 'integer',
  format: 'int64',
  description: 'The plant identifier (signed 64-bit)',
  examples: [1]
})

/**
 * An int64 id in a path or query string. It is validated as a canonical decimal string (the `int64`
 * ajv format), so values beyond 2^53 are never rounded; the OpenAPI document shows it as
 * `type: integer, format: int64` (see plugins/docs.ts).
 */
export const Int64StringSchema = Type.String({ format: 'int64', description: 'A signed 64-bit integer', examples: ['1'] })

export const PlantParamsSchema = Type.Object({ id: Int64StringSchema }, { additionalProperties: false })
export type PlantParams = Static<typeof PlantParamsSchema>

export const PlantSchema = Type.Object(
  {
    id: PlantIdSchema,
    name: Type.String({ description: 'The plant name', examples: ['Monstera'] }),
    tag: Type.Optional(Type.String({ description: 'A free-form tag', examples: ['tropical'] })),
    createdAt: Type.String({ format: 'date-time', description: 'When the plant was created' }),
    updatedAt: Type.String({ format: 'date-time', description: 'When the plant was last changed' })
  },
  { $id: 'Plant', additionalProperties: false, description: 'A plant' }
)
export type Plant = Static<typeof PlantSchema>
