import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Type, type Static } from '@sinclair/typebox'
import envSchema from 'env-schema'
import { ConfigError } from './errors.js'
import { isPostgresUrl, parsePostgresUrl } from './store/postgres/connection.js'
import { SQLITE_SYNCHRONOUS, type SqliteSynchronous } from './store/sqlite/sqlite-store.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** The environment variables plant-store reads, validated once at start-up. */
const EnvSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  DATABASE_URL: Type.String({ minLength: 1, default: 'data/plants.db' }),
  API_TOKENS: Type.Optional(Type.String()),
  API_TOKENS_FILE: Type.Optional(Type.String({ minLength: 1 })),
  PG_POOL_MAX: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
  PG_CONNECT_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 5000 }),
  PG_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 5000 }),
  SQLITE_SYNCHRONOUS: Type.Unsafe<SqliteSynchronous>({ type: 'string', enum: SQLITE_SYNCHRONOUS, default: 'full' }),
  LOG_LEVEL: Type.Unsafe<LogLevel>({ type: 'string', enum: LOG_LEVELS, default: 'info' }),
  ALLOW_WEAK_TOKENS: Type.Unsafe<'0' | '1'>({ type: 'string', enum: ['0', '1'], default: '0' }),
  // Limits and timeouts (milliseconds); see README "Operating it".
  BODY_LIMIT: Type.Integer({ minimum: 1, default: 16 * 1024 }),
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 10_000 }),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 30_000 }),
  CONNECTION_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 120_000 }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 72_000 }),
  MAX_REQUESTS_PER_SOCKET: Type.Integer({ minimum: 0, default: 1000 }),
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, default: 10_000 }),
  RATE_LIMIT_MAX: Type.Integer({ minimum: 0, default: 1000 }),
  RATE_LIMIT_WINDOW: Type.Integer({ minimum: 0, default: 60_000 }),
  REDIS_URL: Type.Optional(Type.String({ minLength: 1 })),
  REDIS_KEY_PREFIX: Type.String({ default: 'plant-store:' }),
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 0, default: 1000 }),
  MAX_EVENT_LOOP_UTILIZATION: Type.Number({ minimum: 0, maximum: 1, default: 0 }),
  MAX_HEAP_USED_BYTES: Type.Integer({ minimum: 0, default: 0 }),
  MAX_RSS_BYTES: Type.Integer({ minimum: 0, default: 0 }),
  CORS_ORIGINS: Type.String({ default: '' }),
  PUBLIC_URL: Type.Optional(Type.String({ minLength: 1 })),
  DOCS_PERSIST_AUTHORIZATION: Type.Unsafe<'0' | '1'>({ type: 'string', enum: ['0', '1'], default: '0' })
})

type Env = Static<typeof EnvSchema>

export interface Config {
  port: number
  host: string
  /** A `postgres://` URL (optionally `?schema=name`), else a SQLite file path, or `:memory:`. */
  databaseUrl: string
  /** PostgreSQL: the most connections one instance opens. */
  pgPoolMax: number
  /** PostgreSQL: how long a request waits for a connection before it is answered 503. */
  pgConnectTimeoutMs: number
  /** PostgreSQL: the longest a statement may run or wait for a lock before the request is answered 503. */
  pgStatementTimeoutMs: number
  /** SQLite durability: `full` survives a power loss, `normal` a process crash. */
  sqliteSynchronous: SqliteSynchronous
  tokens: string[]
  /** True when no token was configured and one was made up for this run. */
  tokenGenerated: boolean
  logLevel: LogLevel
  /** Largest request body accepted, in bytes (413 beyond). */
  bodyLimit: number
  /** Slow clients: headers must arrive within `headers`, the whole request within `request`. */
  timeouts: { headers: number, request: number, connection: number, keepAlive: number }
  /** 0 = unlimited. */
  maxRequestsPerSocket: number
  /** How long a shutdown waits for in-flight requests before cutting connections. */
  shutdownGraceMs: number
  /** `max` requests per `windowMs` per token (per IP without a valid token); off when either is 0. */
  rateLimit: { max: number, windowMs: number }
  /** Shared rate-limit counters across instances, when set. */
  redis?: { url: string, keyPrefix: string }
  /** Overload thresholds; 0 turns one off. */
  pressure: { maxEventLoopDelayMs: number, maxEventLoopUtilization: number, maxHeapUsedBytes: number, maxRssBytes: number }
  /** Browser origins allowed by CORS; empty = CORS off. `*` allows any origin. */
  corsOrigins: string[]
  /** Where clients reach the service (no trailing slash), for the OpenAPI `servers`; unset: `/`, relative to the document. */
  publicUrl?: string
  /** Swagger UI: keep the bearer token in the browser's localStorage across reloads. */
  docs: { persistAuthorization: boolean }
}

/** Bearer tokens shorter than this are guessable in principle; refused unless ALLOW_WEAK_TOKENS=1. */
const MIN_TOKEN_LENGTH = 32

/**
 * Reads and validates the configuration from an environment (process.env by default).
 * Throws ConfigError with a message meant for the person starting the service.
 */
export function loadConfig (env: NodeJS.ProcessEnv = process.env): Config {
  let parsed: Env
  try {
    parsed = envSchema<Env>({ schema: EnvSchema, data: { ...env }, dotenv: false })
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${(err as Error).message}`)
  }

  if (isPostgresUrl(parsed.DATABASE_URL)) {
    try {
      parsePostgresUrl(parsed.DATABASE_URL)
    } catch (err) {
      throw new ConfigError(`invalid configuration: ${(err as Error).message}`)
    }
  }

  const tokens = [...splitTokens(parsed.API_TOKENS, ','), ...readTokensFile(parsed.API_TOKENS_FILE)]
  const tokenGenerated = tokens.length === 0
  if (tokenGenerated) tokens.push(randomBytes(32).toString('base64url'))
  if (parsed.ALLOW_WEAK_TOKENS !== '1' && tokens.some((token) => token.length < MIN_TOKEN_LENGTH)) {
    throw new ConfigError(`invalid configuration: every API token needs at least ${MIN_TOKEN_LENGTH} characters (set ALLOW_WEAK_TOKENS=1 for local trials only)`)
  }
  if (parsed.HEADERS_TIMEOUT_MS > parsed.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('invalid configuration: HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS')
  }

  return {
    port: parsed.PORT,
    host: parsed.HOST,
    databaseUrl: parsed.DATABASE_URL,
    pgPoolMax: parsed.PG_POOL_MAX,
    pgConnectTimeoutMs: parsed.PG_CONNECT_TIMEOUT_MS,
    pgStatementTimeoutMs: parsed.PG_STATEMENT_TIMEOUT_MS,
    sqliteSynchronous: parsed.SQLITE_SYNCHRONOUS,
    tokens: [...new Set(tokens)],
    tokenGenerated,
    logLevel: parsed.LOG_LEVEL,
    bodyLimit: parsed.BODY_LIMIT,
    timeouts: {
      headers: parsed.HEADERS_TIMEOUT_MS,
      request: parsed.REQUEST_TIMEOUT_MS,
      connection: parsed.CONNECTION_TIMEOUT_MS,
      keepAlive: parsed.KEEP_ALIVE_TIMEOUT_MS
    },
    maxRequestsPerSocket: parsed.MAX_REQUESTS_PER_SOCKET,
    shutdownGraceMs: parsed.SHUTDOWN_GRACE_MS,
    rateLimit: { max: parsed.RATE_LIMIT_MAX, windowMs: parsed.RATE_LIMIT_WINDOW },
    ...(parsed.REDIS_URL !== undefined && { redis: { url: parsed.REDIS_URL, keyPrefix: parsed.REDIS_KEY_PREFIX } }),
    pressure: {
      maxEventLoopDelayMs: parsed.MAX_EVENT_LOOP_DELAY_MS,
      maxEventLoopUtilization: parsed.MAX_EVENT_LOOP_UTILIZATION,
      maxHeapUsedBytes: parsed.MAX_HEAP_USED_BYTES,
      maxRssBytes: parsed.MAX_RSS_BYTES
    },
    corsOrigins: parsed.CORS_ORIGINS.split(',').map((origin) => origin.trim()).filter((origin) => origin !== ''),
    ...(parsed.PUBLIC_URL !== undefined && { publicUrl: parsePublicUrl(parsed.PUBLIC_URL) }),
    docs: { persistAuthorization: parsed.DOCS_PERSIST_AUTHORIZATION === '1' }
  }
}

/**
 * PUBLIC_URL: an absolute http(s) URL, as clients reach the service (a proxy's address, perhaps with
 * a path prefix). It is published in the OpenAPI document, so it may carry no credentials, and no
 * query or fragment (paths are appended to it). Returned without a trailing slash.
 */
function parsePublicUrl (text: string): string {
  const problem = (what: string) => new ConfigError(`invalid configuration: PUBLIC_URL ${what} (e.g. https://plants.example.com)`)
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw problem('must be an absolute http or https URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw problem('must be an absolute http or https URL')
  if (url.username !== '' || url.password !== '') throw problem('must not carry credentials')
  if (text.includes('?') || text.includes('#')) throw problem('must have no query string or fragment')
  return url.href.replace(/\/+$/, '')
}

function splitTokens (text: string | undefined, separator: string | RegExp): string[] {
  if (text === undefined) return []
  const tokens = text.split(separator).map((token) => token.trim()).filter((token) => token !== '')
  for (const token of tokens) {
    // A token travels in an HTTP header: only visible ASCII, as RFC 6750's b64token allows.
    if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(token)) {
      throw new ConfigError('invalid configuration: a token may only hold the characters A-Z a-z 0-9 - . _ ~ + / and trailing =')
    }
  }
  return tokens
}

function readTokensFile (path: string | undefined): string[] {
  if (path === undefined) return []
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`invalid configuration: API_TOKENS_FILE cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}: ${path})`)
  }
  return splitTokens(text, /\r?\n/)
}
