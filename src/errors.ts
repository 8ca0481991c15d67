/**
 * Every error class of plant-store, in one place. None of them knows HTTP: a failure carries a
 * `code`, and plugins/app/error-handler.ts alone decides which status (and, where the cause must
 * stay private, which message) a client sees for it.
 */

/** Why a request could not be served, as the core and the stores say it. */
export type ErrorCode =
  /** The addressed resource does not exist. */
  | 'not-found'
  /** The client chose an id that is taken. */
  | 'conflict'
  /** An If-Match or If-None-Match condition does not hold for the resource as it is now. */
  | 'precondition-failed'
  /** An Idempotency-Key came back with a different request. */
  | 'idempotency-key-reused'
  /** The database cannot be reached or used right now; retrying later may work. */
  | 'unavailable'
  /** The database's storage is full: nothing was written. */
  | 'storage-full'
  /** Every id the server may assign itself (1 to 2^53 - 1) is taken; a client may still choose one. */
  | 'ids-exhausted'
  /** A request header the schema alone cannot judge is malformed. */
  | 'invalid-header'
  /** A query value the schema alone cannot judge is malformed. */
  | 'invalid-query'
  /** The service is draining before it stops. */
  | 'shutting-down'
  /** The service sheds load (event-loop delay or memory past its threshold). */
  | 'overloaded'
  /** The keep-alive connection has served its requests. */
  | 'connection-spent'
  /** The caller sent more requests than its rate limit allows. */
  | 'rate-limited'
  /** A webhook URL that is not an absolute http(s) URL of at most 2048 characters without credentials. */
  | 'invalid-url'
  /** A webhook URL whose host is, or resolves to, an address the policy refuses (loopback, private, …). */
  | 'url-not-allowed'
  /** A webhook URL whose host name does not resolve to any address. */
  | 'url-unresolvable'
  /** A webhook event type list that is empty or names an unknown type. */
  | 'invalid-events'
  /** A webhook description that is too long. */
  | 'invalid-description'
  /** A webhook secret supplied for a rotation that is not `whsec_` and 24 to 64 bytes in base64. */
  | 'invalid-secret'
  /** The owner already has as many webhook subscriptions as WEBHOOK_MAX_SUBSCRIPTIONS allows. */
  | 'subscription-limit'
  /** A delivery of a disabled subscription: not retried until the subscription is enabled. */
  | 'subscription-disabled'
  /** The path exists, but not with this method (MethodNotAllowedError carries the methods it has). */
  | 'method-not-allowed'
  /** A method no resource of this service supports (CONNECT: this is no proxy). */
  | 'method-not-implemented'
  /** The request body is malformed in a way its schema cannot say (not JSON, not UTF-8, prototype keys, a body where none is defined). */
  | 'invalid-body'
  /** The body's media type or charset is not one the operation reads. */
  | 'unsupported-media-type'
  /** The body comes with a content coding (gzip, …), which the service does not decode. */
  | 'unsupported-content-encoding'
  /** An `Expect` the service cannot meet (anything but 100-continue). */
  | 'expectation-failed'
  /** The readiness probe: this instance should get no traffic now (draining, shedding load, no database). */
  | 'not-ready'

/** Codes of deliberate load shedding: expected in floods exactly when the service is busiest. */
export const LOAD_SHEDDING_CODES: ReadonlySet<ErrorCode> = new Set(['shutting-down', 'overloaded', 'connection-spent'])

/** A failure with a code; `message` is written for the client (the error handler may replace it). */
export class ServiceError extends Error {
  override name = 'ServiceError'
  constructor (readonly code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options)
  }
}

export const plantNotFound = (id: bigint): ServiceError => new ServiceError('not-found', `Plant ${id} not found`)
export const plantIdTaken = (id: bigint): ServiceError => new ServiceError('conflict', `Plant ${id} already exists`)
export const plantPreconditionFailed = (id: bigint): ServiceError =>
  new ServiceError('precondition-failed', `Plant ${id} does not match If-Match: it has changed or is gone; GET it again`)
export const plantNoneMatchFailed = (id: bigint): ServiceError =>
  new ServiceError('precondition-failed', `Plant ${id} matches If-None-Match: it exists, and its current ETag is listed (or *)`)
export const idempotencyKeyReused = (): ServiceError =>
  new ServiceError('idempotency-key-reused', 'This Idempotency-Key was already used with a different request body')
/** The cause (a driver error) is kept for the log; the client sees only that the database is unavailable. */
export const databaseUnavailable = (cause: unknown): ServiceError =>
  new ServiceError('unavailable', 'The database is unavailable, retry shortly', { cause })
/** The cause (a driver or file system error) is kept for the log. */
export const storageFull = (cause: unknown): ServiceError =>
  new ServiceError('storage-full', 'The database storage is full; nothing was written', { cause })
export const idsExhausted = (): ServiceError =>
  new ServiceError('ids-exhausted', 'No id up to 2^53 - 1 is left for the server to assign; create the plant with a chosen id')
export const subscriptionLimit = (max: number): ServiceError =>
  new ServiceError('subscription-limit', `This token already has ${max} webhook subscriptions, the most allowed: delete one first`)
export const invalidHeader = (message: string): ServiceError => new ServiceError('invalid-header', message)
export const invalidQuery = (message: string): ServiceError => new ServiceError('invalid-query', message)
export const shuttingDown = (): ServiceError =>
  new ServiceError('shutting-down', 'The service is shutting down, retry on another instance')
export const connectionSpent = (): ServiceError =>
  new ServiceError('connection-spent', 'This connection has served its requests, retry on a new one')
export const rateLimited = (after: string): ServiceError => new ServiceError('rate-limited', `Rate limit exceeded, retry in ${after}`)
/** `why` completes "Not ready: …"; a cause (a driver error) is kept for the log only. */
export const notReady = (why: string, options?: ErrorOptions): ServiceError => new ServiceError('not-ready', `Not ready: ${why}`, options)

/** True when `err` is a ServiceError (with this code, when one is given). */
export const isServiceError = (err: unknown, code?: ErrorCode): err is ServiceError =>
  err instanceof ServiceError && (code === undefined || err.code === code)
export const routeNotFound = (message: string): ServiceError => new ServiceError('not-found', message)
export const invalidBody = (message: string): ServiceError => new ServiceError('invalid-body', message)
export const unsupportedMediaType = (message: string): ServiceError => new ServiceError('unsupported-media-type', message)
export const unsupportedContentEncoding = (message: string): ServiceError => new ServiceError('unsupported-content-encoding', message)
export const expectationFailed = (message: string): ServiceError => new ServiceError('expectation-failed', message)
export const methodNotImplemented = (message: string): ServiceError => new ServiceError('method-not-implemented', message)

/** A path that exists, asked with a method it does not have; `allowed` are the ones it has (the `Allow` header). */
export class MethodNotAllowedError extends ServiceError {
  constructor (message: string, readonly allowed: readonly string[]) {
    super('method-not-allowed', message)
  }
}

/** @fastify/under-pressure constructs its error itself, without arguments: a class of its own. */
export class OverloadedError extends ServiceError {
  constructor () {
    super('overloaded', 'The service is overloaded, retry later')
  }
}

/** A configuration value that stops the start; the message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Raised at start-up when the database is not a plant-store database, or is newer than this code. */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError'
}
