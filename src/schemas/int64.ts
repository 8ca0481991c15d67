import { Type } from '@sinclair/typebox'

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const CANONICAL_INT64 = /^(?:0|-?[1-9][0-9]{0,18})$/

/** Canonical decimal: no `+`, leading zeros, exponent, white space or `-0`. */
export function isCanonicalInteger (text: string): boolean {
  return /^(?:0|-?[1-9][0-9]*)$/.test(text)
}

/** The ajv format that validates int64 strings (path parameters, cursors) without rounding them. */
export const int64Format = {
  type: 'string',
  validate: (text: string): boolean => {
    if (!CANONICAL_INT64.test(text)) return false
    const value = BigInt(text)
    return value >= INT64_MIN && value <= INT64_MAX
  }
} as const

/** An int64 id in a body: a JSON integer, serialized exactly from a bigint. */
export const int64IdSchema = (description: string) =>
  Type.Unsafe<bigint>({ type: 'integer', format: 'int64', description, examples: [1] })

/** A string, so values beyond 2^53 are never rounded; the document shows an integer (plugins/external/docs.ts). */
export const int64StringSchema = (description = 'A signed 64-bit integer', example = '1') =>
  Type.String({ format: 'int64', description, examples: [example] })
