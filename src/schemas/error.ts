import { Type, type Static, type TUnsafe } from '@sinclair/typebox'
import { acceptEncodingHeader, retryAfterHeader, wwwAuthenticateHeader } from './headers.js'
import { ref } from './ref.js'

/** The one body every non-2xx response carries; `error` repeats the HTTP status code. */
export const ErrorSchema = Type.Object(
  {
    error: Type.Integer({ format: 'int32', description: 'The HTTP status code', examples: [404] }),
    message: Type.String({ description: 'What went wrong, for a person to read', examples: ['Plant 42 not found'] })
  },
  { $id: 'Error', additionalProperties: false, description: 'An error' }
)
export type ErrorBody = Static<typeof ErrorSchema>

type ErrorRef = TUnsafe<ErrorBody>

/** The headers an error status carries, as plugins/app/error-handler.ts sends them. */
const STATUS_HEADERS: Readonly<Record<string, Record<string, unknown>>> = {
  401: wwwAuthenticateHeader,
  403: wwwAuthenticateHeader,
  415: acceptEncodingHeader,
  503: retryAfterHeader
}

/** `4xx` and `5xx` carry Retry-After: a 429, a 503 while shedding load. */
const rangeResponse = (description: string, error: number, message: string): ErrorRef =>
  ref(ErrorSchema, { description, examples: [{ error, message }], headers: retryAfterHeader })

/** Error responses for a route's statuses and `4xx`/`5xx`, so the serializer enforces the shape everywhere. */
export function errorResponses<const S extends number> (
  statuses: Record<S, string>
): Record<S | '4xx' | '5xx', ErrorRef> {
  const responses: Record<string, ErrorRef> = {}
  // Each with its own example (Swagger UI's "Example Value"): the status and its description.
  for (const [status, description] of Object.entries<string>(statuses)) {
    const headers = STATUS_HEADERS[status]
    responses[status] = ref(ErrorSchema, {
      description,
      examples: [{ error: Number(status), message: description }],
      ...(headers !== undefined && { headers })
    })
  }
  responses['4xx'] = rangeResponse('Client error', 415, 'Unsupported Media Type')
  responses['5xx'] = rangeResponse('Server error', 500, 'Internal Server Error')
  return responses as Record<S | '4xx' | '5xx', ErrorRef>
}

/** The same, behind bearer auth: with the 401 and 403 every such route can answer. */
export const authenticatedErrorResponses = <const S extends number>(statuses: Record<S, string>) =>
  errorResponses({
    ...statuses,
    401: 'Missing or invalid bearer token',
    403: 'The token lacks the scope this operation needs'
  })
