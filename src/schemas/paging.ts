import { Type } from '@sinclair/typebox'

export const LIST_LIMIT_DEFAULT = 20
const LIST_LIMIT_MAX = 100

/** Optional: ajv's useDefaults fills in the default. */
export const listLimitSchema = (what: string) => Type.Optional(Type.Integer({
  format: 'int32',
  minimum: 1,
  maximum: LIST_LIMIT_MAX,
  default: LIST_LIMIT_DEFAULT,
  description: `How many ${what} to return at most (1 to ${LIST_LIMIT_MAX}, canonical decimal)`,
  examples: [LIST_LIMIT_DEFAULT]
}))

export const cursorSchema = (description: string) =>
  Type.Optional(Type.String({ format: 'int64', description, examples: ['42'] }))
