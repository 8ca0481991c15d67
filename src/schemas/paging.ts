import { Type } from '@sinclair/typebox'

/** Keyset paging of the lists (plants, webhook subscriptions, deliveries): `limit` and a cursor. */

export const LIST_LIMIT_DEFAULT = 20
const LIST_LIMIT_MAX = 100

/** The `limit` query parameter of a list of `what`: optional, ajv's useDefaults fills in the default. */
export const listLimitSchema = (what: string) => Type.Optional(Type.Integer({
  format: 'int32',
  minimum: 1,
  maximum: LIST_LIMIT_MAX,
  default: LIST_LIMIT_DEFAULT,
  description: `How many ${what} to return at most (1 to ${LIST_LIMIT_MAX}, canonical decimal)`,
  examples: [LIST_LIMIT_DEFAULT]
}))

/** A keyset cursor query parameter: an int64 id. */
export const cursorSchema = (description: string) =>
  Type.Optional(Type.String({ format: 'int64', description, examples: ['42'] }))
