/** Every error class, in one place. None knows HTTP: plugins/app/error-handler.ts maps each `code` to a status. */

export type ErrorCode =
  | 'not-found' | 'conflict' | 'precondition-failed' | 'idempotency-key-reused'
  /** Retrying later may work. */
  | 'unavailable'
  | 'storage-full'
  /** Only server-assigned ids (1 to 2^53 - 1); a client may still choose one. */
  | 'ids-exhausted'
  | 'invalid-header' | 'invalid-query'
  | 'shutting-down' | 'overloaded' | 'connection-spent' | 'rate-limited'
  | 'invalid-url' | 'url-not-allowed' | 'url-unresolvable' | 'invalid-events' | 'invalid-description'
  | 'invalid-secret' | 'subscription-limit'
  /** A sandbox tenant already holds SANDBOX_MAX_PLANTS of a resource. */
  | 'collection-limit'
  /** At SANDBOX_MAX_TENANTS with every tenant in use. */
  | 'sandbox-full'
  /** Every tenant store this instance may open is in use. */
  | 'sandbox-busy'
  /** No delivery slot free for a test event (paced as deliveries). */
  | 'webhook-busy'
  /** Not retried until the subscription is enabled. */
  | 'subscription-disabled'
  | 'method-not-allowed' | 'method-not-implemented'
  /** What its schema cannot say: not JSON, not UTF-8, not I-JSON, prototype keys, a body where none is defined. */
  | 'invalid-body'
  | 'unsupported-media-type' | 'unsupported-content-encoding' | 'expectation-failed' | 'not-ready'
  | 'invalid-token' | 'insufficient-scope'
  /** The identity provider's keys cannot be fetched and no cached key fits the token. */
  | 'auth-unavailable'

/** Expected in floods exactly when the service is busiest. */
export const LOAD_SHEDDING_CODES: ReadonlySet<ErrorCode> = new Set(['shutting-down', 'overloaded', 'connection-spent'])

/** `message` is written for the client. */
export class ServiceError extends Error {
  override name = 'ServiceError'
  constructor (readonly code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options)
  }
}

/** The write rules of every resource: messages name it by its title (`Plant 3 not found`). */
export const notFound = (resource: { title: string }, id: bigint): ServiceError =>
  new ServiceError('not-found', `${resource.title} ${id} not found`)
export const idTaken = (resource: { title: string }, id: bigint): ServiceError =>
  new ServiceError('conflict', `${resource.title} ${id} already exists`)
export const preconditionFailed = (resource: { title: string }, id: bigint): ServiceError =>
  new ServiceError(
    'precondition-failed',
    `${resource.title} ${id} does not match If-Match: it has changed or is gone; GET it again`
  )
export const noneMatchFailed = (resource: { title: string }, id: bigint): ServiceError =>
  new ServiceError(
    'precondition-failed',
    `${resource.title} ${id} matches If-None-Match: it exists, and its current ETag is listed (or *)`
  )
export const idempotencyKeyReused = (): ServiceError =>
  new ServiceError('idempotency-key-reused', 'This Idempotency-Key was already used with a different request body')
/** The cause is kept for the log; the client sees only that the database is unavailable. */
export const databaseUnavailable = (cause: unknown): ServiceError =>
  new ServiceError('unavailable', 'The database is unavailable, retry shortly', { cause })
/** A table or column this code needs is gone or renamed (a newer release's contract step): not this request's fault. */
export const schemaUnavailable = (cause: unknown): ServiceError => new SchemaUnavailableError(cause)
/** A standby or read-only database: every write would be a 503, so the instance is not ready for traffic. */
export class ReadOnlyDatabaseError extends ServiceError {
  constructor () {
    super('unavailable', 'The database is read-only, retry shortly')
  }
}
export const storageFull = (cause: unknown): ServiceError =>
  new ServiceError('storage-full', 'The database storage is full; nothing was written', { cause })
export const idsExhausted = (resource: { title: string }): ServiceError =>
  new ServiceError(
    'ids-exhausted',
    `No id up to 2^53 - 1 is left for the server to assign; create the ${resource.title.toLowerCase()} with a chosen id`
  )
export const subscriptionLimit = (max: number): ServiceError =>
  new ServiceError(
    'subscription-limit',
    `This token already has ${max} webhook subscriptions, the most allowed: delete one first`
  )
export const invalidHeader = (message: string): ServiceError => new ServiceError('invalid-header', message)
export const invalidQuery = (message: string): ServiceError => new ServiceError('invalid-query', message)
export const shuttingDown = (): ServiceError =>
  new ServiceError('shutting-down', 'The service is shutting down, retry on another instance')
export const sandboxBusy = (): ServiceError =>
  new ServiceError('sandbox-busy', 'Every sandbox store this instance may open is in use: retry shortly')
export const sandboxFull = (): ServiceError =>
  new ServiceError('sandbox-full', 'The sandbox holds as many tenants as it may and all are in use: retry later')

/** 503 `unavailable`, of the schema rather than the connection: readiness says which. */
export class SchemaUnavailableError extends ServiceError {
  constructor (cause: unknown) {
    super('unavailable', 'This instance cannot serve the database schema as it is now; retry shortly', { cause })
  }
}

/** A refusal that says when to come back (Retry-After). */
export class RetryLaterError extends ServiceError {
  override name = 'RetryLaterError'
  constructor (code: ErrorCode, message: string, readonly retryAfterS: number) {
    super(code, message)
  }
}

export const webhookBusy = (retryAfterS: number): RetryLaterError => new RetryLaterError('webhook-busy',
  'No webhook delivery slot is free for a test event (test events are paced as deliveries): ' +
    `retry in ${retryAfterS} s`, retryAfterS)
export const collectionLimit = (resource: { collection: string }, max: number): ServiceError =>
  new ServiceError(
    'collection-limit',
    `This sandbox token already has ${max} ${resource.collection}, the most allowed: delete one first`
  )
export const connectionSpent = (): ServiceError =>
  new ServiceError('connection-spent', 'This connection has served its requests, retry on a new one')
export const rateLimited = (after: string): ServiceError =>
  new ServiceError('rate-limited', `Rate limit exceeded, retry in ${after}`)
export const notReady = (why: string, options?: ErrorOptions): ServiceError =>
  new ServiceError('not-ready', `Not ready: ${why}`, options)

export const isServiceError = (err: unknown, code?: ErrorCode): err is ServiceError =>
  err instanceof ServiceError && (code === undefined || err.code === code)
export const routeNotFound = (message: string): ServiceError => new ServiceError('not-found', message)
export const invalidBody = (message: string): ServiceError => new ServiceError('invalid-body', message)
export const unsupportedMediaType = (message: string): ServiceError =>
  new ServiceError('unsupported-media-type', message)
export const unsupportedContentEncoding = (message: string): ServiceError =>
  new ServiceError('unsupported-content-encoding', message)
export const expectationFailed = (message: string): ServiceError => new ServiceError('expectation-failed', message)
export const methodNotImplemented = (message: string): ServiceError =>
  new ServiceError('method-not-implemented', message)

export class MethodNotAllowedError extends ServiceError {
  constructor (message: string, readonly allowed: readonly string[]) {
    super('method-not-allowed', message)
  }
}

/** @fastify/under-pressure constructs its error itself, without arguments. */
export class OverloadedError extends ServiceError {
  constructor () {
    super('overloaded', 'The service is overloaded, retry later')
  }
}

/** A refusal of the caller's credentials, with the `WWW-Authenticate` challenge (RFC 6750 §3). */
export class AuthError extends ServiceError {
  constructor (code: 'invalid-token' | 'insufficient-scope', message: string, readonly challenge: string) {
    super(code, message)
  }
}

/** `check` completes "Invalid token: …" and names the check that failed; it never quotes the token. */
export const invalidToken = (check: string): AuthError =>
  new AuthError('invalid-token', `Invalid token: ${check}`, 'Bearer error="invalid_token"')
export const insufficientScope = (scope: string): AuthError =>
  new AuthError(
    'insufficient-scope',
    `This token lacks the scope ${scope}, which this operation needs`,
    `Bearer error="insufficient_scope", scope="${scope}"`
  )
/** `retryAfterS`: when the next key fetch may be tried, so a client that waits that long is served. */
export class AuthUnavailableError extends ServiceError {
  constructor (readonly retryAfterS: number, options?: ErrorOptions) {
    super('auth-unavailable', 'The identity provider\'s signing keys cannot be fetched, retry shortly', options)
  }
}
/** The cause (a network error, a provider's answer) is kept for the log. */
export const authUnavailable = (retryAfterS: number, cause?: unknown): AuthUnavailableError =>
  new AuthUnavailableError(retryAfterS, { cause })

/** A configuration value that stops the start; the message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

export class StoreOpenError extends Error {
  override name = 'StoreOpenError'
}
