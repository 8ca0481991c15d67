import { Type } from '@sinclair/typebox'

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
// Canonical decimal only: no sign plus, no leading zeros, no exponent, no white space, no "-0".
const CANONICAL_INTEGER = /^(?:0|-?[1-9][0-9]{0,18})$/

/** True for an integer written in canonical decimal (no `+`, leading zeros, exponent or white space). */
export function isCanonicalInteger (text: string): boolean {
  return /^(?:0|-?[1-9][0-9]*)$/.test(text)
}

/** Parses an int64 written as a canonical decimal string, exactly; undefined when it is not one. */
function parseInt64 (text: string): bigint | undefined {
  if (!CANONICAL_INTEGER.test(text)) return undefined
  const value = BigInt(text)
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined
}

/** The ajv format that validates int64 strings (path parameters, cursors) without rounding them. */
export const int64Format = {
  type: 'string',
  validate: (text: string): boolean => parseInt64(text) !== undefined
} as const

/** An int64 id in a body: a JSON integer, serialized exactly from a bigint. */
export const int64IdSchema = (description: string) =>
  Type.Unsafe<bigint>({ type: 'integer', format: 'int64', description, examples: [1] })

/**
 * An int64 in a path or query string. It is validated as a canonical decimal string (the `int64`
 * ajv format), so values beyond 2^53 are never rounded; the OpenAPI document shows it as
 * `type: integer, format: int64` (see plugins/external/docs.ts).
 */
export const int64StringSchema = (description = 'A signed 64-bit integer', example = '1') =>
  Type.String({ format: 'int64', description, examples: [example] })
