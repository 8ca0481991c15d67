import { Type, type TString } from '@sinclair/typebox'
import { describedPattern } from './pattern-messages.js'

/**
 * No NUL (PostgreSQL cannot store it) and no lone surrogates (no UTF-8 form). Ajv compiles with the
 * `u` flag, so a surrogate pair is one character and the class matches only lone surrogates.
 */
export const STORABLE_TEXT = describedPattern('^[^\\u0000\\uD800-\\uDFFF]*$',
  'must not contain NUL (U+0000) or unpaired UTF-16 surrogates (U+D800 to U+DFFF)')
export const STORABLE_TEXT_RULE = 'no NUL (U+0000) or unpaired UTF-16 surrogates'

/**
 * A text a client writes and the store keeps trimmed (`what`: `The plant name`). `\s` is what
 * String#trim removes; the storable-text rule sits under allOf to keep its own message, with its
 * type, or generated clients type the property as `unknown` or `any`.
 */
export const trimmedTextSchema = (what: string, maxLength: number, example: string): TString =>
  Type.String({
    pattern: describedPattern(
      `^\\s*\\S(?:[\\s\\S]{0,${maxLength - 2}}\\S)?\\s*$`,
      `must be 1 to ${maxLength} characters after trimming surrounding white space`
    ),
    allOf: [{ type: 'string', pattern: STORABLE_TEXT }],
    description: `${what}: 1 to ${maxLength} characters after trimming surrounding white space, stored trimmed; ` +
      `${STORABLE_TEXT_RULE}`,
    examples: [example]
  })
