import { Type } from '@sinclair/typebox'
import { describedPattern } from './pattern-messages.js'

/**
 * Request and response header schemas. Request headers are validated by Fastify (names lower-case)
 * and documented as header parameters; response headers only document what the routes send.
 */

const ETAG_EXAMPLE = '"3q2-7w4QWm6uR5m0o5ZxBA"'

/** A conditional request header: optional, a list of entity tags or `*`. */
const entityTags = (description: string) => Type.Optional(Type.String({ description, examples: [ETAG_EXAMPLE] }))

/** The conditions a read honours (RFC 9110 §13.2.2: If-Match first, then If-None-Match). */
export const ReadConditionsHeaderSchema = Type.Object({
  'if-match': entityTags('Answer only if the plant\'s current ETag is one of these (strong comparison: a weak tag never ' +
    'matches), or `*`; else 412'),
  'if-none-match': entityTags('Answer 304 Not Modified when the plant\'s current ETag is one of these (weak comparison), or `*`')
})

/** The conditions a write honours; either one failing is a 412 and nothing is written. */
export const WriteConditionsHeaderSchema = Type.Object({
  'if-match': entityTags('Write only if the plant\'s current ETag is one of these (strong comparison), or `*` for any ' +
    'current plant; else 412'),
  'if-none-match': entityTags('Write only if the plant\'s current ETag is none of these (weak comparison); else 412. ' +
    '`*` means "only if there is no such plant": on an existing plant it is a 412, on a missing one the write goes ' +
    'on as usual (404: writes here never create)')
})

const IDEMPOTENCY_KEY_MAX_LENGTH = 255

export const IdempotencyKeyHeaderSchema = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    minLength: 1,
    maxLength: IDEMPOTENCY_KEY_MAX_LENGTH,
    // Visible ASCII only: no spaces, controls or non-ASCII.
    pattern: describedPattern('^[\\x21-\\x7E]+$', 'must be visible ASCII characters only (no spaces)'),
    description: 'Makes the create safe to retry for 24 hours: a retry with the same key and body answers the ' +
      'first 201 again (with `Idempotent-Replayed: true`) and creates nothing; the same key with another body is a 422. ' +
      `1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters; keys are per token.`,
    examples: ['5f0c6f7e-2b8e-4c43-9d55-1c1e4f7c2a10']
  }))
})

/** Response headers, for the OpenAPI document. */
export const etagHeader = { ETag: { type: 'string', description: 'The strong entity tag of the plant, for If-Match and If-None-Match' } }
export const locationHeader = { Location: { type: 'string', format: 'uri-reference', description: 'The new plant: `/plants/{id}`' } }
export const linkHeader = { Link: { type: 'string', description: 'When more plants follow: `</plants?limit=…&after=…>; rel="next"`' } }
export const replayedHeader = { 'Idempotent-Replayed': { type: 'string', enum: ['true'], description: 'Present when this is the replayed answer to an earlier create with the same Idempotency-Key' } }
