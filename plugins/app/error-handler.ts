import type { Socket } from 'node:net'
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type {
  FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError, HTTPMethods
} from 'fastify'
import fp from 'fastify-plugin'
import { SANDBOX_FULL_RETRY_AFTER_S } from '../../src/sandbox/tenants.js'
import {
  AuthError, AuthUnavailableError, expectationFailed, LOAD_SHEDDING_CODES, MethodNotAllowedError, methodNotImplemented,
  RetryLaterError, routeNotFound, ServiceError, type ErrorCode
} from '../../src/lib/errors.js'
import type { ErrorBody } from '../../src/schemas/error.js'
import { patternMessages } from '../../src/schemas/pattern-messages.js'
import { labelUnroutedRequest } from '../http/route-label.js'

/** The one place where a failure of the core becomes an HTTP status. */
const STATUS: Readonly<Record<ErrorCode, number>> = {
  'not-found': 404,
  conflict: 409,
  'precondition-failed': 412,
  'idempotency-key-reused': 422,
  unavailable: 503,
  // 507, not 503 (which promises a retry soon may work): a full disk or used-up ids need an operator.
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
  'collection-limit': 409,
  'sandbox-full': 503,
  'sandbox-busy': 503,
  'webhook-busy': 503,
  'method-not-allowed': 405,
  'method-not-implemented': 501,
  'invalid-body': 400,
  'unsupported-media-type': 415,
  'unsupported-content-encoding': 415,
  'expectation-failed': 417,
  'not-ready': 503,
  'invalid-token': 401,
  'insufficient-scope': 403,
  'auth-unavailable': 503
}

/** Long enough for a restarted PostgreSQL to come back, short enough not to idle; /health says the same. */
export const UNAVAILABLE_RETRY_AFTER_S = 5

/** The Retry-After of the 503s whose error does not carry one. */
const RETRY_AFTER_S: Partial<Record<ErrorCode, number>> = {
  unavailable: UNAVAILABLE_RETRY_AFTER_S,
  'sandbox-full': SANDBOX_FULL_RETRY_AFTER_S,
  'sandbox-busy': 1
}

/** RFC 9110 §11.6.1 (401), §15.5.6 (405), §15.5.16 (415), RFC 6750 §3 (a refused token or scope), Retry-After. */
function refusalHeaders (error: unknown, status: number): Record<string, string> {
  if (error instanceof AuthError) return { 'www-authenticate': error.challenge }
  if (status === 401) return { 'www-authenticate': 'Bearer' }
  if (error instanceof MethodNotAllowedError) return { allow: error.allowed.join(', ') }
  if (!(error instanceof ServiceError)) return {}
  if (error.code === 'unsupported-content-encoding') return { 'accept-encoding': 'identity' }
  const carried = error instanceof AuthUnavailableError || error instanceof RetryLaterError
  const retryAfterS = carried ? error.retryAfterS : RETRY_AFTER_S[error.code]
  return retryAfterS === undefined ? {} : { 'retry-after': String(retryAfterS) }
}

/** At most `max` characters of what a client sent, so a message never grows with the request. */
export const clipped = (text: string, max: number): string => text.length > max ? `${text.slice(0, max)}…` : text

const pathOf = (url: string): string => url.split('?', 1)[0] ?? url

/** Messages never echo a whole URL back: it may be kilobytes long, or carry a secret in its query string. */
const quotedPath = (url: string): string => clipped(pathOf(url), 100)

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
const methodRank = (method: string): number => {
  const rank = METHOD_ORDER.indexOf(method)
  return rank === -1 ? METHOD_ORDER.length : rank
}

/** OPTIONS alone does not count: with CORS on, its preflight route matches every path. */
function allowedMethods (app: FastifyInstance, url: string): string[] {
  const allowed = app.supportedMethods.filter(
    (method) => app.findRoute({ method: method as HTTPMethods, url }) !== null
  )
  if (allowed.every((method) => method === 'OPTIONS')) return []
  return allowed.sort((a, b) => methodRank(a) - methodRank(b))
}

/** The routes' URL templates, to find the route of a path whose method has none (the router does not say). */
class RouteTemplates {
  readonly #patterns: Array<{ template: string, pattern: RegExp }> = []

  add (template: string): void {
    if (this.#patterns.some((known) => known.template === template)) return
    const source = template.split('/').map((segment) => segment.startsWith(':')
      ? '[^/]+'
      : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('/')
    this.#patterns.push({ template, pattern: new RegExp(`^${source}$`) })
    // Static templates first, as the router tries them.
    const dynamic = (template: string): number => Number(template.includes(':') || template.includes('*'))
    this.#patterns.sort((a, b) => dynamic(a.template) - dynamic(b.template))
  }

  match (url: string): string | undefined {
    const path = pathOf(url)
    return this.#patterns.find(({ pattern }) => pattern.test(path))?.template
  }
}

/** Each app's route templates, filled as its routes are added (the errors plugin decorates the root). */
const routeTemplates = new WeakMap<FastifyInstance, RouteTemplates>()

/**
 * A path with routes, but not for this method, is a 405 with `Allow`; anything else a 404. Neither needs a token:
 * which methods a path has is in the public OpenAPI document.
 */
export function notFoundError (app: FastifyInstance, request: FastifyRequest): ServiceError {
  const path = quotedPath(request.url)
  const allowed = allowedMethods(app, request.url)
  if (allowed.length > 0 && !allowed.includes(request.method)) {
    const template = routeTemplates.get(app)?.match(request.url)
    if (template !== undefined) labelUnroutedRequest(request, template)
    return new MethodNotAllowedError(
      `Method ${request.method} is not allowed on ${path} (it allows ${allowed.join(', ')})`,
      allowed
    )
  }
  return routeNotFound(`Route ${request.method} ${path} not found`)
}

export function errorBody (status: number, message: string): ErrorBody { return { error: status, message } }

/** Anything but a ServiceError or a framework 4xx is a generic 500: no stack, SQL or path leaves the service. */
function toErrorBody (error: unknown): ErrorBody {
  if (error instanceof ServiceError) return errorBody(STATUS[error.code], error.message)
  const { statusCode: status, message } = (error ?? {}) as Partial<FastifyError>
  if (typeof status === 'number' && typeof message === 'string' && status >= 400 && status < 500) {
    return errorBody(status, message)
  }
  return errorBody(500, 'Internal Server Error')
}

export function formatValidationErrors (errors: FastifySchemaValidationError[], dataVar: string): Error {
  const messages = errors.map((error) => {
    const where = `${dataVar}${error.instancePath}`
    const params = error.params as Record<string, unknown>
    if (error.keyword === 'additionalProperties') {
      return `${where} has unknown property '${String(params.additionalProperty)}'`
    }
    if (error.keyword === 'required') return `${where} must have property '${String(params.missingProperty)}'`
    if (error.keyword === 'enum' && Array.isArray(params.allowedValues)) {
      return `${where} must be one of ${params.allowedValues.map((value) => JSON.stringify(value)).join(', ')}`
    }
    const patternMessage = error.keyword === 'pattern' ? patternMessages.get(String(params.pattern)) : undefined
    if (patternMessage !== undefined) return `${where} ${patternMessage}`
    return `${where} ${error.message ?? 'is invalid'}`
  })
  return new Error(messages.join(', '))
}

/** Errors Fastify raises before routing bypass the error handler, so they are answered here. */
export function frameworkErrorHandler (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const body = toErrorBody(error)
  // Fastify quotes the whole path in these messages (`'<path>' is not a valid url component`).
  const message = body.message.replace(request.url, quotedPath(request.url))
  void reply.code(body.error).type('application/json; charset=utf-8').send(errorBody(body.error, message))
}

/** Requests the HTTP parser rejects never reach Fastify: answer in the Error shape on the socket. */
export function clientErrorHandler (error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  // The statuses Node itself would have answered, in the Error shape.
  const status = error.code === 'HPE_HEADER_OVERFLOW'
    ? 431
    : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? 413 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
  writeRawError(socket, errorBody(status, STATUS_CODES[status] ?? 'Bad Request'))
}

function writeRawError (socket: Socket, body: ErrorBody): void {
  const json = JSON.stringify(body)
  socket.end(
    `HTTP/1.1 ${body.error} ${STATUS_CODES[body.error] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`
  )
}

export function writeErrorResponse (response: ServerResponse, body: ErrorBody, headers: Record<string, string> = {}) {
  const json = JSON.stringify(body)
  response.writeHead(body.error, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(json),
    ...headers
  })
  response.end(json)
}

/** Node answers a bad `Expect` (bare 417) and CONNECT (dropped) itself: answer them in the Error shape. */
function answerBelowFastify (app: FastifyInstance): void {
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const expect = clipped(String(request.headers.expect), 40)
    const error = expectationFailed(`Expect: ${expect} is not supported (only 100-continue is)`)
    writeErrorResponse(response, toErrorBody(error), { connection: 'close' })
  })
  app.server.on('connect', (_request: IncomingMessage, socket: Socket) => {
    // Node hands the socket over without its own error listener: a client that resets it must not crash the process.
    socket.on('error', () => socket.destroy())
    writeRawError(socket, toErrorBody(methodNotImplemented('CONNECT is not supported: this service is not a proxy')))
  })
}

const QUIET_REFUSALS: ReadonlySet<ErrorCode> = new Set([
  'not-ready', 'auth-unavailable', 'sandbox-busy', 'sandbox-full', 'webhook-busy'
])

/** Every failure once Fastify has routed the request leaves here as `{ error, message }`. */
export default fp(async function errorHandlerPlugin (app) {
  app.setErrorHandler(function handleError (error, request, reply) {
    const body = toErrorBody(error)
    // Load shedding, not-ready and a full sandbox's 503s come in floods when the service is busiest: debug, no stack.
    const quiet = error instanceof ServiceError &&
      (LOAD_SHEDDING_CODES.has(error.code) || QUIET_REFUSALS.has(error.code))
    // An unavailable database's failures are told by the database watch: its start, end, and a count per period.
    const told = error instanceof ServiceError && error.code === 'unavailable' && !this.databaseWatch.failed('request')
    if (quiet) request.log.debug({ reason: body.message }, 'request refused')
    else if (body.error >= 500 && !told) request.log.error({ err: error }, 'request failed')
    return reply.code(body.error).headers(refusalHeaders(error, body.error)).send(body)
  })

  // Unrouted requests are answered in requests.ts; this answers a route that finds nothing to serve (callNotFound).
  const templates = new RouteTemplates()
  routeTemplates.set(app, templates)
  app.addHook('onRoute', (route) => { templates.add(route.url) })
  app.setNotFoundHandler(async function handleNotFound (request) {
    throw notFoundError(app, request)
  })

  answerBelowFastify(app)
}, { name: 'errors' })
