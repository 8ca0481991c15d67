import { Type } from '@sinclair/typebox'
import { describedPattern } from './pattern-messages.js'

const ETAG_EXAMPLE = '"3q2-7w4QWm6uR5m0o5ZxBA"'

const entityTags = (description: string) => Type.Optional(Type.String({ description, examples: [ETAG_EXAMPLE] }))

/** RFC 9110 §13.2.2: If-Match first, then If-None-Match (`name`: `plant`). */
export const readConditionsHeaders = (name: string) =>
  Type.Object({
    'if-match': entityTags(
      `Answer only if the ${name}'s current ETag is one of these (strong comparison: a weak tag never ` +
        'matches), or `*`; else 412'
    ),
    'if-none-match': entityTags(
      `Answer 304 Not Modified when the ${name}'s current ETag is one of these (weak comparison), or \`*\``
    )
  })

export const writeConditionsHeaders = (name: string) =>
  Type.Object({
    'if-match': entityTags(
      `Write only if the ${name}'s current ETag is one of these (strong comparison), or \`*\` for any ` +
        `current ${name}; else 412`
    ),
    'if-none-match': entityTags(
      `Write only if the ${name}'s current ETag is none of these (weak comparison); else 412. ` +
        `\`*\` means "only if there is no such ${name}": on an existing ${name} it is a 412, on a missing one the ` +
        'write goes on as usual (404: writes here never create)'
    )
  })

const IDEMPOTENCY_KEY_MAX_LENGTH = 255

export const IdempotencyKeyHeaderSchema = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    minLength: 1,
    maxLength: IDEMPOTENCY_KEY_MAX_LENGTH,
    pattern: describedPattern('^[\\x21-\\x7E]+$', 'must be visible ASCII characters only (no spaces)'),
    description:
      'Makes the create safe to retry for 24 hours: a retry with the same key and body answers the first 201 again ' +
      '(with `Idempotent-Replayed: true`) and creates nothing; the same key with another body is a 422. ' +
      `1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters; keys are per token.`,
    examples: ['5f0c6f7e-2b8e-4c43-9d55-1c1e4f7c2a10']
  }))
})

/** For the OpenAPI document only; plugins/external/docs.ts moves `required: true` to the header object. */
interface ResponseHeader {
  type: 'string'
  description: string
  required?: true
  format?: string
  pattern?: string
  enum?: string[]
}
type ResponseHeaders = Record<string, ResponseHeader>

const secondsHeader = (description: string) =>
  ({ type: 'string', pattern: '^[0-9]+$', description }) satisfies ResponseHeader

/** A resource's answers: its ETag, and a create's Location (`name`: `plant`, `collection`: `plants`). */
export const etagHeaderOf = (name: string) => ({
  ETag: {
    type: 'string',
    required: true,
    description: `The strong entity tag of the ${name}, for If-Match and If-None-Match`
  }
}) satisfies ResponseHeaders
const locationOf = (description: string) => ({
  Location: { type: 'string', required: true, format: 'uri-reference', description }
}) satisfies ResponseHeaders
const nextLinkOf = (description: string) => ({ Link: { type: 'string', description } }) satisfies ResponseHeaders

export const resourceLocationHeader = (name: string, collection: string) =>
  locationOf(`The new ${name}: \`/${collection}/{id}\``)
export const resourceLinkHeader = (collection: string) =>
  nextLinkOf(`When more ${collection} follow: \`</${collection}?limit=…&after=…>; rel="next"\``)
export const webhookLocationHeader = locationOf('The new subscription: `/webhooks/{id}`')
export const webhookLinkHeader = nextLinkOf('When more subscriptions follow: `</webhooks?limit=…&after=…>; rel="next"`')
export const deliveryLinkHeader = nextLinkOf(
  'When older deliveries follow: `</webhooks/{id}/deliveries?limit=…&before=…>; rel="next"`'
)
export const replayedHeader = {
  'Idempotent-Replayed': {
    type: 'string',
    enum: ['true'],
    description: 'Present when this is the replayed answer to an earlier create with the same Idempotency-Key'
  }
} satisfies ResponseHeaders
/** On every 401 (RFC 9110 §11.6.1) and 403 (RFC 6750 §3). */
export const wwwAuthenticateHeader = {
  'WWW-Authenticate': {
    type: 'string',
    required: true,
    pattern: '^Bearer( error="(invalid_token|insufficient_scope)"(, scope="[a-z:]+")?)?$',
    description:
      'The authentication scheme to use, a bearer token; with `error="invalid_token"` when a JWT failed a check, ' +
      'and on a 403 `error="insufficient_scope", scope="<the scope needed>"` (RFC 6750 §3)'
  }
} satisfies ResponseHeaders
/** RFC 9110 §15.5.16. */
export const acceptEncodingHeader = {
  'Accept-Encoding': {
    type: 'string',
    enum: ['identity'],
    description: "When the body's Content-Encoding was refused: `identity`, no content coding is accepted"
  }
} satisfies ResponseHeaders
export const retryAfterHeader = {
  'Retry-After': secondsHeader(
    'Seconds to wait before retrying: on a 429 (rate limit reached) and on a 503 while the service sheds load'
  )
} satisfies ResponseHeaders
export const rateLimitHeaders = {
  'RateLimit-Limit': secondsHeader('Requests allowed per window for this caller (when rate limiting is on)'),
  'RateLimit-Remaining': secondsHeader('Requests left in the current window (when rate limiting is on)'),
  'RateLimit-Reset': secondsHeader('Seconds until the window resets (when rate limiting is on)')
} satisfies ResponseHeaders

/** A caller's `X-Request-Id` goes into logs and back out in a header: kept only when this tame. */
export const REQUEST_ID_PATTERN = '^[A-Za-z0-9._:-]{1,128}$'

/** On every answer (plugins/app/request-log.ts): one component, referenced by every response of the document. */
export const requestIdHeader = {
  'X-Request-Id': {
    type: 'string',
    required: true,
    pattern: REQUEST_ID_PATTERN,
    description: 'The id of this request, in its access log line: the caller\'s `X-Request-Id` ' +
      'when it was 1 to 128 of `A-Z a-z 0-9 . _ : -`, else a new UUID. Quote it when reporting a problem'
  }
} satisfies ResponseHeaders

/** The CORS plugin exposes exactly these: a browser's script may read only exposed headers. */
export const DOCUMENTED_RESPONSE_HEADERS: readonly string[] = Object.keys({
  ...etagHeaderOf(''),
  ...resourceLocationHeader('', ''),
  ...resourceLinkHeader(''),
  ...replayedHeader,
  ...wwwAuthenticateHeader,
  ...acceptEncodingHeader,
  ...retryAfterHeader,
  ...rateLimitHeaders,
  ...requestIdHeader
})
