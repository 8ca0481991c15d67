import type { Socket } from 'node:net'
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError, HTTPMethods } from 'fastify'
import fp from 'fastify-plugin'
import {
  expectationFailed, LOAD_SHEDDING_CODES, MethodNotAllowedError, methodNotImplemented, routeNotFound, ServiceError, type ErrorCode
} from '../../src/errors.js'
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
  // 507 Insufficient Storage: the request was fine, the server cannot store it. Not a 503, which
  // promises that a retry soon may work: a full disk or a used-up id range needs an operator.
  'storage-full': 507,
  'ids-exhausted': 507,
  'invalid-header': 400,
  'invalid-query': 400,
  'shutting-down': 503,
  overloaded: 503,
  'connection-spent': 503,
  'rate-limited': 429,
  'invalid-url': 400,
  'url-not-allowed': 400,
  'url-unresolvable': 400,
  'invalid-events': 400,
  'invalid-description': 400,
  'invalid-secret': 400,
  // The request is fine; the token's subscriptions as they are now refuse it (delete one, retry).
  'subscription-limit': 409,
  'subscription-disabled': 409,
  'method-not-allowed': 405,
  'method-not-implemented': 501,
  'invalid-body': 400,
  'unsupported-media-type': 415,
  'unsupported-content-encoding': 415,
  'expectation-failed': 417,
  'not-ready': 503
}

/**
 * The headers some refusals carry to tell the client what would work: the token scheme on a 401
 * (RFC 9110 §11.6.1), the methods the path has on a 405 (§15.5.6), on a 415 caused by a content
 * coding, that none is accepted (§15.5.16), and on a 503 for the database, when to retry.
 */
function refusalHeaders (error: unknown, status: number): Record<string, string> {
  if (status === 401) return { 'www-authenticate': 'Bearer' }
  if (error instanceof MethodNotAllowedError) return { allow: error.allowed.join(', ') }
  if (error instanceof ServiceError && error.code === 'unsupported-content-encoding') return { 'accept-encoding': 'identity' }
  // A database that cannot be reached or used (SQLite I/O, PostgreSQL down): worth a retry shortly.
  if (error instanceof ServiceError && error.code === 'unavailable') return { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_S) }
  return {}
}

/** The longest part of a request's path an error message quotes. */
const QUOTED_PATH_MAX = 100

/**
 * A request's path as an error message may quote it: without the query string, cut at 100
 * characters. Messages never echo a whole URL back (it may be kilobytes long, or carry a secret in
 * its query string).
 */
export function quotedPath (url: string): string {
  const end = url.indexOf('?')
  const path = end === -1 ? url : url.slice(0, end)
  return path.length > QUOTED_PATH_MAX ? `${path.slice(0, QUOTED_PATH_MAX)}…` : path
}

/** The order `Allow` lists methods in; any other method the router has comes after them. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
const methodRank = (method: string): number => {
  const rank = METHOD_ORDER.indexOf(method)
  return rank === -1 ? METHOD_ORDER.length : rank
}

/**
 * The methods the router has a route for at this URL. OPTIONS alone does not count: with CORS on,
 * its preflight route matches every path, known or not.
 */
function allowedMethods (app: FastifyInstance, url: string): string[] {
  const allowed = app.supportedMethods.filter((method) => app.findRoute({ method: method as HTTPMethods, url }) !== null)
  if (allowed.every((method) => method === 'OPTIONS')) return []
  return allowed.sort((a, b) => methodRank(a) - methodRank(b))
}

/**
 * Seconds a client is asked to wait (`Retry-After`) when the database is unavailable: long enough
 * for a restarted PostgreSQL or a dropped connection to come back, short enough not to idle. The
 * 503s of /health say the same.
 */
export const UNAVAILABLE_RETRY_AFTER_S = 5

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
    if (error.keyword === 'enum' && Array.isArray(params.allowedValues)) return `${where} must be one of ${params.allowedValues.map((value) => JSON.stringify(value)).join(', ')}`
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
export function frameworkErrorHandler (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const body = toErrorBody(error)
  // Fastify quotes the whole path in these messages (`'<path>' is not a valid url component`).
  const message = body.message.includes(request.url)
    ? body.message.replace(request.url, quotedPath(request.url))
    : body.message
  void reply.code(body.error).type('application/json; charset=utf-8').send(errorBody(body.error, message))
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
  // The statuses Node itself would have answered for these parser errors, in the Error shape.
  const status = error.code === 'HPE_HEADER_OVERFLOW'
    ? 431
    : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? 413 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
  writeRawError(socket, errorBody(status, STATUS_CODES[status] ?? 'Bad Request'))
}

/** An Error-shaped answer written straight on a socket, below Node's HTTP layer; the connection then closes. */
function writeRawError (socket: Socket, body: ErrorBody): void {
  const json = JSON.stringify(body)
  socket.end(
    `HTTP/1.1 ${body.error} ${STATUS_CODES[body.error] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`
  )
}

/** An Error-shaped answer on a response Node hands over before Fastify sees the request; the connection then closes. */
function writeNodeError (response: ServerResponse, body: ErrorBody): void {
  const json = JSON.stringify(body)
  response.writeHead(body.error, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(json),
    connection: 'close'
  })
  response.end(json)
}

/** The longest `Expect` value a 417 quotes. */
const QUOTED_EXPECT_MAX = 40

/**
 * Node answers two kinds of request itself, before Fastify: an `Expect` other than 100-continue (a
 * bare 417) and CONNECT (it drops the connection without a word). Both are answered here instead,
 * in the Error shape, with their status from the table above.
 */
function answerBelowFastify (app: FastifyInstance): void {
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const expect = String(request.headers.expect)
    const quoted = expect.length > QUOTED_EXPECT_MAX ? `${expect.slice(0, QUOTED_EXPECT_MAX)}…` : expect
    const error = expectationFailed(`Expect: ${quoted} is not supported (only 100-continue is)`)
    writeNodeError(response, errorBody(STATUS[error.code], error.message))
  })
  app.server.on('connect', (_request: IncomingMessage, socket: Socket) => {
    // Node hands the socket over without its own error listener: a client that resets it must not crash the process.
    socket.on('error', () => socket.destroy())
    const error = methodNotImplemented('CONNECT is not supported: this service is not a proxy')
    writeRawError(socket, errorBody(STATUS[error.code], error.message))
  })
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
    return reply.code(body.error).headers(refusalHeaders(error, body.error)).send(body)
  })

  // A path the router knows, with a method it lacks, is a 405 with `Allow`; only unknown paths are
  // 404s. Neither needs a token: which methods a path has is in the public OpenAPI document.
  app.setNotFoundHandler(async function handleNotFound (request) {
    const path = quotedPath(request.url)
    const allowed = allowedMethods(app, request.url)
    if (allowed.length > 0) {
      throw new MethodNotAllowedError(`Method ${request.method} is not allowed on ${path} (it allows ${allowed.join(', ')})`, allowed)
    }
    throw routeNotFound(`Route ${request.method} ${path} not found`)
  })

  answerBelowFastify(app)
}, { name: 'errors' })
