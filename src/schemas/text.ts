import { Type, type TString } from '@sinclair/typebox'
import { describedPattern } from './pattern-messages.js'

/** PostgreSQL cannot store NUL, a lone surrogate has no UTF-8 form; with ajv's `u` flag a pair is one character. */
export const STORABLE_TEXT = describedPattern('^[^\\u0000\\uD800-\\uDFFF]*$',
  'must not contain NUL (U+0000) or unpaired UTF-16 surrogates (U+D800 to U+DFFF)')
export const STORABLE_TEXT_RULE = 'no NUL (U+0000) or unpaired UTF-16 surrogates'

/**
 * Stored trimmed (`what`: `The plant name`); `\s` is what String#trim removes. The storable-text rule sits under
 * allOf to keep its own message, with its type, or generated clients type the property as `unknown` or `any`.
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
