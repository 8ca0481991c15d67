import type { Socket } from 'node:net'
import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import fp from 'fastify-plugin'
import { LOAD_SHEDDING_CODES, ServiceError, type ErrorCode } from '../../src/errors.js'
import type { ErrorBody } from '../../src/schemas/error.js'
import { patternMessages } from '../../src/schemas/pattern-messages.js'

/**
 * The HTTP status of every error code: the one place where a failure of the core (a store, a
 * header parser, load shedding) becomes a status. Its message was written for the client.
 */
const STATUS: Readonly<Record<ErrorCode, number>> = {
  'not-found': 404,
  conflict: 409,
  'precondition-failed': 412,
  'idempotency-key-reused': 422,
  unavailable: 503,
  'invalid-header': 400,
  'invalid-query': 400,
  'shutting-down': 503,
  overloaded: 503,
  'connection-spent': 503,
  'rate-limited': 429,
  'not-ready': 503
}

/** The Error body for a status: `error` is the status code itself. */
export function errorBody (status: number, message: string): ErrorBody {
  return { error: status, message }
}

/**
 * Turns an error from any source into the status and message a client may see: a ServiceError by
 * its code; a 4xx that Fastify or an @fastify plugin raised (validation, body parsing, auth) as it
 * is. Anything else is a generic 500: no stack, SQL text or file path leaves the service.
 */
function toErrorBody (error: unknown): ErrorBody {
  if (error instanceof ServiceError) return errorBody(STATUS[error.code], error.message)
  const { statusCode: status, message } = (error ?? {}) as Partial<FastifyError>
  if (typeof status === 'number' && typeof message === 'string' && status >= 400 && status < 500) {
    return errorBody(status, message)
  }
  return errorBody(500, 'Internal Server Error')
}

/** Validation messages that name the offending field, e.g. `body has unknown property 'colour'`. */
export function formatValidationErrors (errors: FastifySchemaValidationError[], dataVar: string): Error {
  const messages = errors.map((error) => {
    const where = `${dataVar}${error.instancePath}`
    const params = error.params as Record<string, unknown>
    if (error.keyword === 'additionalProperties') return `${where} has unknown property '${String(params.additionalProperty)}'`
    if (error.keyword === 'required') return `${where} must have property '${String(params.missingProperty)}'`
    const patternMessage = error.keyword === 'pattern' ? patternMessages.get(String(params.pattern)) : undefined
    if (patternMessage !== undefined) return `${where} ${patternMessage}`
    return `${where} ${error.message ?? 'is invalid'}`
  })
  return new Error(messages.join(', '))
}

/**
 * Fastify's `frameworkErrors` option: errors it raises before routing (a malformed URL, for one)
 * bypass the error handler below, so they are answered here, in the same shape.
 */
export function frameworkErrorHandler (error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const body = toErrorBody(error)
  void reply.code(body.error).type('application/json; charset=utf-8').send(body)
}

/**
 * Node's `clientError` (Fastify's `clientErrorHandler` option): requests so malformed that the HTTP
 * parser rejects them never reach Fastify. Answer in the Error shape on the socket, then hang up.
 */
export function clientErrorHandler (error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
  const body = JSON.stringify(errorBody(status, STATUS_CODES[status] ?? 'Bad Request'))
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

/**
 * The error handler and the not-found handler: every failure once Fastify has routed the request
 * (validation, auth, body parsing, a store's ServiceError, a crash) leaves here as
 * `{ error, message }` with `error` equal to the HTTP status. The two handlers above cover what
 * happens before routing and below Fastify.
 */
export default fp(async function errorHandlerPlugin (app) {
  app.setErrorHandler(function handleError (error, request, reply) {
    const body = toErrorBody(error)
    // Load shedding (draining, overload, a spent connection) comes in floods exactly when the service
    // is busiest: one line each, without a stack, at debug level. Any other 5xx is an error.
    // A readiness probe answering 503 is the probe working (the route logs what it found), not a failure.
    if (error instanceof ServiceError && (LOAD_SHEDDING_CODES.has(error.code) || error.code === 'not-ready')) request.log.debug({ reason: body.message }, 'request refused')
    else if (body.error >= 500) request.log.error({ err: error }, 'request failed')
    if (body.error === 401) void reply.header('www-authenticate', 'Bearer')
    return reply.code(body.error).send(body)
  })

  app.setNotFoundHandler(function handleNotFound (request, reply) {
    return reply.code(404).send(errorBody(404, `Route ${request.method} ${request.url} not found`))
  })
}, { name: 'errors' })
