import { DEFAULT_MAX_SUBSCRIPTIONS } from './webhooks/limits.js'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { Type, type Static } from '@sinclair/typebox'
import envSchema from 'env-schema'
import { ConfigError } from './errors.js'
import { isPostgresUrl, parsePostgresUrl } from './store/postgres/connection.js'
import { SQLITE_SYNCHRONOUS, type SqliteSynchronous } from './store/sqlite/sqlite-store.js'
import {
  DEFAULT_BUSY_INTERVAL_MS, DEFAULT_CONCURRENCY, DEFAULT_DISABLE_AFTER_MS, DEFAULT_PER_SUBSCRIPTION, DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_RETENTION_MS, DEFAULT_TIMEOUT_MS
} from './webhooks/dispatcher.js'
import { DEFAULT_RETRY_SCHEDULE_MS } from './webhooks/schedule.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** The longest wait any WEBHOOK_* setting takes: a year. */
const MAX_WEBHOOK_MS = 365 * 24 * 3_600_000
/** The most retries WEBHOOK_RETRY_SCHEDULE lists. */
const MAX_WEBHOOK_RETRIES = 50

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
  PG_STARTUP_TIMEOUT_MS: Type.Integer({ minimum: 0, maximum: 3_600_000, default: 30_000 }),
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
  SHUTDOWN_DELAY_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: 0 }),
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
  DOCS_PERSIST_AUTHORIZATION: Type.Unsafe<'0' | '1'>({ type: 'string', enum: ['0', '1'], default: '0' }),
  // Operations (README "Operating it").
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String()),
  OTEL_SERVICE_NAME: Type.String({ minLength: 1, default: 'plant-store' }),
  TRUST_PROXY: Type.String({ default: '' }),
  // Webhooks (README "Webhooks").
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 1, maximum: 600_000, default: DEFAULT_TIMEOUT_MS }),
  WEBHOOK_RETRY_SCHEDULE: Type.Optional(Type.String()),
  WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: DEFAULT_CONCURRENCY }),
  WEBHOOK_SUBSCRIPTION_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: DEFAULT_PER_SUBSCRIPTION }),
  WEBHOOK_DISABLE_AFTER_MS: Type.Integer({ minimum: 1, maximum: MAX_WEBHOOK_MS, default: DEFAULT_DISABLE_AFTER_MS }),
  WEBHOOK_RETENTION_MS: Type.Integer({ minimum: 1, maximum: MAX_WEBHOOK_MS, default: DEFAULT_RETENTION_MS }),
  WEBHOOK_POLL_INTERVAL_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: DEFAULT_POLL_INTERVAL_MS }),
  WEBHOOK_BUSY_INTERVAL_MS: Type.Integer({ minimum: 1, maximum: 60_000, default: DEFAULT_BUSY_INTERVAL_MS }),
  WEBHOOK_MAX_SUBSCRIPTIONS: Type.Integer({
    minimum: 1,
    maximum: 100_000,
    default: DEFAULT_MAX_SUBSCRIPTIONS,
    description: 'The most webhook subscriptions one token may have; creating one more is a 409.'
  }),
  WEBHOOK_ALLOW_PRIVATE_URLS: Type.Unsafe<'0' | '1'>({ type: 'string', enum: ['0', '1'], default: '0' })
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
  /** PostgreSQL: how long a starting instance keeps retrying a database it cannot reach (0: no retry). */
  pgStartupTimeoutMs: number
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
  /**
   * How long, from SIGTERM, the instance keeps listening and serving while /health/ready already
   * answers 503, so a balancer that polls it stops sending traffic before the listener closes.
   */
  shutdownDelayMs: number
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
  /** The Prometheus listener (GET /metrics), when METRICS_PORT is set; nothing is collected otherwise. */
  metrics?: { port: number, host: string }
  /** OTLP/HTTP trace export, when OTEL_EXPORTER_OTLP_ENDPOINT is set; nothing is loaded otherwise. */
  tracing?: { tracesUrl: string, serviceName: string }
  /**
   * Fastify's `trustProxy`: false (the default: the socket's peer is the client), a hop count, or the
   * proxies' addresses/CIDRs. Decides `request.ip` (rate limits, logs) and `request.protocol`.
   */
  trustProxy: false | number | string[]
  webhooks: WebhookConfig
  /** The package version, for the build_info metric and the traces' resource. */
  version: string
}

/** How webhooks are delivered (the WEBHOOK_* settings). */
export interface WebhookConfig {
  /** One attempt's time limit, from resolving the host to the answer's status. */
  timeoutMs: number
  /** The waits before each retry; its length is the number of retries. */
  schedule: number[]
  /** Attempts in flight per instance. */
  concurrency: number
  /** Attempts in flight per subscription per instance: a slow receiver holds at most this many. */
  perSubscription: number
  /** A subscription whose attempts have all failed for this long is disabled. */
  disableAfterMs: number
  /** Finished deliveries are kept this long. */
  retentionMs: number
  /** How often due deliveries (retries, other instances' events) are looked for without a wake. */
  pollIntervalMs: number
  /** While the API saturates the event loop, attempts start at least this far apart (one at a time). */
  busyIntervalMs: number
  /** The most subscriptions one owner (token) may have. */
  maxSubscriptions: number
  /** Loopback, private, link-local ... receivers allowed (local development and tests only). */
  allowPrivate: boolean
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
  const tracesUrl = otlpTracesUrl(parsed.OTEL_EXPORTER_OTLP_ENDPOINT)
  if (parsed.METRICS_PORT !== undefined && parsed.METRICS_PORT !== 0 && parsed.METRICS_PORT === parsed.PORT) {
    throw new ConfigError('invalid configuration: METRICS_PORT must differ from PORT (the API port never serves metrics)')
  }

  return {
    port: parsed.PORT,
    host: parsed.HOST,
    databaseUrl: parsed.DATABASE_URL,
    pgPoolMax: parsed.PG_POOL_MAX,
    pgConnectTimeoutMs: parsed.PG_CONNECT_TIMEOUT_MS,
    pgStatementTimeoutMs: parsed.PG_STATEMENT_TIMEOUT_MS,
    pgStartupTimeoutMs: parsed.PG_STARTUP_TIMEOUT_MS,
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
    shutdownDelayMs: parsed.SHUTDOWN_DELAY_MS,
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
    docs: { persistAuthorization: parsed.DOCS_PERSIST_AUTHORIZATION === '1' },
    ...(parsed.METRICS_PORT !== undefined && { metrics: { port: parsed.METRICS_PORT, host: parsed.METRICS_HOST } }),
    ...(tracesUrl !== undefined && { tracing: { tracesUrl, serviceName: parsed.OTEL_SERVICE_NAME } }),
    trustProxy: parseTrustProxy(parsed.TRUST_PROXY),
    webhooks: {
      timeoutMs: parsed.WEBHOOK_TIMEOUT_MS,
      schedule: parseRetrySchedule(parsed.WEBHOOK_RETRY_SCHEDULE),
      concurrency: parsed.WEBHOOK_CONCURRENCY,
      perSubscription: parsed.WEBHOOK_SUBSCRIPTION_CONCURRENCY,
      disableAfterMs: parsed.WEBHOOK_DISABLE_AFTER_MS,
      retentionMs: parsed.WEBHOOK_RETENTION_MS,
      pollIntervalMs: parsed.WEBHOOK_POLL_INTERVAL_MS,
      busyIntervalMs: parsed.WEBHOOK_BUSY_INTERVAL_MS,
      maxSubscriptions: parsed.WEBHOOK_MAX_SUBSCRIPTIONS,
      allowPrivate: parsed.WEBHOOK_ALLOW_PRIVATE_URLS === '1'
    },
    version: PACKAGE_VERSION
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

/** The version in package.json, read once (the build keeps package.json two levels above dist/src). */
const PACKAGE_VERSION = ((): string => {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown }
    return typeof pkg.version === 'string' ? pkg.version : 'unknown'
  } catch {
    return 'unknown'
  }
})()

/**
 * OTEL_EXPORTER_OTLP_ENDPOINT is, as the OpenTelemetry specification defines it, the collector's
 * base URL: traces go to `<endpoint>/v1/traces`. Empty or unset: no tracing.
 */
function otlpTracesUrl (endpoint: string | undefined): string | undefined {
  if (endpoint === undefined || endpoint.trim() === '') return undefined
  let url: URL
  try {
    url = new URL(endpoint.trim())
  } catch {
    throw new ConfigError('invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError('invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL')
  }
  return `${url.href.replace(/\/+$/, '')}/v1/traces`
}

/**
 * WEBHOOK_RETRY_SCHEDULE: the waits before each retry, in milliseconds, comma-separated; unset or
 * empty: the default (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). No retries at all is spelled
 * `none`, so that it is never the accident of an empty value.
 */
function parseRetrySchedule (text: string | undefined): number[] {
  const value = text?.trim() ?? ''
  if (value === '') return [...DEFAULT_RETRY_SCHEDULE_MS]
  if (value === 'none') return []
  const parts = value.split(',').map((part) => part.trim())
  const valid = (part: string): boolean => /^\d+$/.test(part) && Number(part) >= 1 && Number(part) <= MAX_WEBHOOK_MS
  if (parts.length > MAX_WEBHOOK_RETRIES || !parts.every(valid)) {
    throw new ConfigError(`invalid configuration: WEBHOOK_RETRY_SCHEDULE must be "none" or up to ${MAX_WEBHOOK_RETRIES} comma-separated waits in milliseconds (1 to ${MAX_WEBHOOK_MS})`)
  }
  return parts.map(Number)
}

/** proxy-addr's (Fastify's) names for address ranges, accepted in TRUST_PROXY's list as Fastify accepts them. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/**
 * TRUST_PROXY: empty, `0` or `false`: trust no proxy. A whole number: trust that many hops (the
 * client is that many addresses from the right of X-Forwarded-For). Otherwise a comma-separated list
 * of proxy addresses or CIDRs (`10.0.0.0/8`, `::1`, `loopback`). `true` (trust anyone who sends the
 * header) is refused: any client could then choose its own address and escape its rate limit.
 */
function parseTrustProxy (text: string): false | number | string[] {
  const value = text.trim()
  if (value === '' || value === '0' || value === 'false') return false
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    if (!Number.isSafeInteger(hops) || hops > 100) throw new ConfigError('invalid configuration: TRUST_PROXY hop count must be at most 100')
    return hops
  }
  const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  for (const entry of entries) {
    if (!PROXY_RANGE_NAMES.has(entry) && !isAddressOrCidr(entry)) {
      throw new ConfigError(`invalid configuration: TRUST_PROXY must be a hop count or a comma-separated list of IP addresses or CIDRs (not ${JSON.stringify(entry)})`)
    }
  }
  return entries
}

function isAddressOrCidr (entry: string): boolean {
  const [address = '', prefix, extra] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || extra !== undefined) return false
  if (prefix === undefined) return true
  if (!/^\d{1,3}$/.test(prefix)) return false
  return Number(prefix) <= (family === 4 ? 32 : 128)
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
