import { DEFAULT_MAX_SUBSCRIPTIONS } from './webhooks/limits.js'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { Type, type Static } from '@sinclair/typebox'
import type { ErrorObject } from 'ajv'
import envSchema from 'env-schema'
import ipaddr from 'ipaddr.js'
import { ConfigError } from './errors.js'
import { isScope, SCOPES, type Scope } from './scopes.js'
import { isPostgresUrl, parsePostgresUrl } from './store/postgres/connection.js'
import { SQLITE_SYNCHRONOUS, type SqliteSynchronous } from './store/sqlite/sqlite-store.js'
import {
  DEFAULT_BUSY_INTERVAL_MS, DEFAULT_CONCURRENCY, DEFAULT_DISABLE_AFTER_MS, DEFAULT_PER_SUBSCRIPTION, DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_RETENTION_MS, DEFAULT_TIMEOUT_MS
} from './webhooks/dispatcher.js'
import { DEFAULT_RETRY_SCHEDULE_MS } from './webhooks/schedule.js'
import { tokenDigest, type NamedToken } from './tokens.js'
import { loadSeed } from './sandbox/seed.js'
import { OPEN_WAIT_MS } from './sandbox/tenants.js'
import type { NewPlant } from './resources/plants.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]
const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number]
const LOG_FORMATS = ['json', 'pretty'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

/**
 * How long past SHUTDOWN_DELAY_MS + SHUTDOWN_GRACE_MS a stopping process may take before it exits
 * regardless: enough to close the database and hand the last log lines to a live log sink, never
 * forever. A supervisor's grace period (Kubernetes, compose) must cover all three.
 */
export const SHUTDOWN_EXIT_MARGIN_MS = 3000

const MAX_WEBHOOK_MS = 365 * 24 * 3_600_000
const MAX_WEBHOOK_RETRIES = 50

/** The environment variables plant-store reads, validated once at start-up. */
export const EnvSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'TCP port to listen on (0 picks a free one).' }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'Address to listen on (`0.0.0.0` for all interfaces).' }),
  DATABASE_URL: Type.String({ minLength: 1, default: 'data/plants.db', description: 'A SQLite file path (its folder is created) or `:memory:`; a `postgres://` or `postgresql://` URL selects PostgreSQL, with `?schema=name` for a schema of its own (see docs/scaling.md).' }),
  API_TOKENS: Type.Optional(Type.String({
    description: 'Accepted bearer tokens, comma-separated, each with every scope. With no token configured and no ' +
      '`OIDC_ISSUER`, one is made up for the run and printed once; set but holding no token (only commas) stops the ' +
      'start.'
  })),
  API_TOKENS_FILE: Type.Optional(Type.String({
    minLength: 1,
    description: 'A file of accepted bearer tokens (combined with `API_TOKENS`): a plain token a line (every scope), ' +
      'or a named entry `<name> <scopes> sha256:<digest>` (see docs/configuration.md). A file without a token, or ' +
      'with a plain token that is also a named entry, stops the start.'
  })),
  DATABASE_DIRECT_URL: Type.Optional(Type.String({
    minLength: 1,
    description: 'PostgreSQL: a `postgres://` URL of the same database that reaches PostgreSQL itself, when ' +
      'DATABASE_URL is a transaction pooler (PgBouncer); used for migrations and LISTEN (without it the webhook ' +
      'dispatcher polls). See docs/scaling.md.'
  })),
  PG_POOL_MAX: Type.Integer({ minimum: 1, maximum: 1000, default: 10, description: 'PostgreSQL: the most connections one instance opens; N instances open up to N times this.' }),
  PG_CONNECT_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 5000, description: 'PostgreSQL: how long a request waits for a connection before it is answered 503.' }),
  PG_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 5000, description: 'PostgreSQL: the longest a statement may run or wait for a lock before the request is answered 503.' }),
  PG_STARTUP_TIMEOUT_MS: Type.Integer({ minimum: 0, maximum: 3_600_000, default: 30_000, description: 'PostgreSQL: how long a starting instance keeps retrying a database it cannot reach, then exits 1 (0: no retry).' }),
  SQLITE_SYNCHRONOUS: Type.Unsafe<SqliteSynchronous>({ type: 'string', enum: SQLITE_SYNCHRONOUS, default: 'full', description: 'SQLite durability: `full`, an acknowledged write survives a power loss; `normal`, it survives a process crash.' }),
  LOG_LEVEL: Type.Unsafe<LogLevel>({ type: 'string', enum: LOG_LEVELS, default: 'info', description: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`.' }),
  LOG_FORMAT: Type.Optional(Type.Unsafe<LogFormat>({
    type: 'string',
    enum: LOG_FORMATS,
    description: 'How log lines are written to stdout: json (one JSON object a line) or pretty (for a person); unset, pretty on a terminal and json otherwise.'
  })),
  ALLOW_WEAK_TOKENS: Type.Unsafe<'0' | '1'>({ type: 'string', enum: ['0', '1'], default: '0', description: '`1` accepts tokens shorter than 32 characters (local trials only; otherwise they stop the start).' }),
  // Limits and timeouts (docs/operations.md).
  BODY_LIMIT: Type.Integer({ minimum: 1, default: 16 * 1024, description: 'Largest request body in bytes; larger is 413.' }),
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 10_000, description: 'The request headers must arrive within this many milliseconds (else 408 and the connection is closed).' }),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 30_000, description: 'The whole request (headers and body) must arrive within this many milliseconds.' }),
  CONNECTION_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 120_000, description: 'A socket with no traffic for this many milliseconds is closed (0: never; keep it above `KEEP_ALIVE_TIMEOUT_MS`).' }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 72_000, description: 'An idle keep-alive connection is closed after this many milliseconds (above common load balancers\' 60 s).' }),
  MAX_REQUESTS_PER_SOCKET: Type.Integer({ minimum: 0, default: 1000, description: 'Requests one connection may carry; the last answer says `Connection: close` (0: no limit).' }),
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, default: 10_000, description: 'On SIGTERM or SIGINT, how long in-flight requests may take before their connections are cut.' }),
  SHUTDOWN_DELAY_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: 0, description: 'On SIGTERM or SIGINT, how long to keep serving while `/health/ready` already answers 503, before the drain (for balancers that poll readiness).' }),
  RATE_LIMIT_MAX: Type.Integer({ minimum: 0, default: 1000, description: 'Requests per window per token (per client address without a valid token); 0 turns rate limiting off.' }),
  RATE_LIMIT_WINDOW: Type.Integer({ minimum: 0, default: 60_000, description: 'The rate-limit window in milliseconds; 0 turns rate limiting off.' }),
  REDIS_URL: Type.Optional(Type.String({ minLength: 1, description: 'A Redis URL (`redis://127.0.0.1:6379`): rate-limit counters shared by every instance. Unreachable, the limiter fails open.' })),
  REDIS_KEY_PREFIX: Type.String({ default: 'plant-store:', description: 'Prefix of every Redis key (rate limits use `<prefix>rate-limit:`).' }),
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 0, default: 1000, description: 'Shed load (503) while the mean event-loop delay exceeds this many milliseconds; 0: off.' }),
  MAX_EVENT_LOOP_UTILIZATION: Type.Number({ minimum: 0, maximum: 1, default: 0, description: 'Shed load above this event-loop utilization (0 to 1); 0: off.' }),
  MAX_HEAP_USED_BYTES: Type.Integer({ minimum: 0, default: 0, description: 'Shed load above this V8 heap use in bytes; 0: off.' }),
  MAX_RSS_BYTES: Type.Integer({ minimum: 0, default: 0, description: 'Shed load above this resident memory in bytes; 0: off.' }),
  CORS_ORIGINS: Type.String({ default: '', description: 'Comma-separated browser origins allowed by CORS (`*`: any); empty: CORS off.' }),
  PUBLIC_URL: Type.Optional(Type.String({ minLength: 1, description: 'Where clients reach the service (an absolute http(s) URL without credentials, query or fragment): the OpenAPI document\'s `servers`; unset: `/`.' })),
  DOCS_PERSIST_AUTHORIZATION: Type.Unsafe<'0' | '1'>({ type: 'string', enum: ['0', '1'], default: '0', description: '`1`: Swagger UI keeps the token you authorize with in the browser\'s localStorage across reloads.' }),
  // Operations (docs/operations.md).
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535, description: 'Serve Prometheus metrics at `GET /metrics` on this port, on a listener of its own; unset: no metrics at all.' })),
  METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'Address of the metrics listener (`0.0.0.0` for a Prometheus on another host).' }),
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String({ description: 'The OTLP collector\'s base URL: traces go to `<this URL>/v1/traces` over HTTP; unset (with `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): no tracing, and no OpenTelemetry package is loaded.' })),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Type.Optional(Type.String({
    description: 'The full URL traces are exported to (no /v1/traces is added); set alone, it turns tracing on as OTEL_EXPORTER_OTLP_ENDPOINT does.'
  })),
  OTEL_EXPORTER_OTLP_PROTOCOL: Type.Optional(Type.Unsafe<OtlpProtocol>({
    type: 'string',
    enum: OTLP_PROTOCOLS,
    description: 'The OTLP encoding and transport: http/protobuf (the specification\'s default), http/json or grpc.'
  })),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Type.Optional(Type.Unsafe<OtlpProtocol>({
    type: 'string',
    enum: OTLP_PROTOCOLS,
    description: 'OTEL_EXPORTER_OTLP_PROTOCOL for traces only; wins over it.'
  })),
  OTEL_EXPORTER_OTLP_HEADERS: Type.Optional(Type.String({
    description: 'Headers sent with every export, as key=value pairs separated by commas (e.g. an API key for the collector); read by the OpenTelemetry SDK.'
  })),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: Type.Optional(Type.String({ description: 'OTEL_EXPORTER_OTLP_HEADERS for traces only; wins over it.' })),
  OTEL_EXPORTER_OTLP_TIMEOUT: Type.Optional(Type.Integer({ minimum: 1, description: 'How long one export may take, in milliseconds (the SDK\'s default: 10000).' })),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: Type.Optional(Type.Integer({ minimum: 1, description: 'OTEL_EXPORTER_OTLP_TIMEOUT for traces only; wins over it.' })),
  OTEL_SERVICE_NAME: Type.String({ minLength: 1, default: 'plant-store', description: 'The `service.name` of the traces.' }),
  TRUST_PROXY: Type.String({ default: '', description: 'The reverse proxies whose `X-Forwarded-For`/`-Proto` to believe: a hop count, or comma-separated addresses or CIDRs (`loopback` too); empty: none.' }),
  // Webhooks (docs/webhooks.md).
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 1, maximum: 600_000, default: DEFAULT_TIMEOUT_MS, description: 'One delivery attempt\'s time limit in milliseconds, from resolving the receiver\'s host to its answer\'s status; also how long subscribing (or changing a URL) waits for the host\'s lookup.' }),
  WEBHOOK_RETRY_SCHEDULE: Type.Optional(Type.String({ description: 'The waits before each retry in milliseconds, comma-separated, each scaled by a random ±20 % (`none`: no retries). Unset: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.' })),
  WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: DEFAULT_CONCURRENCY, description: 'Delivery attempts in flight per instance (one while requests saturate the event loop).' }),
  WEBHOOK_SUBSCRIPTION_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: DEFAULT_PER_SUBSCRIPTION, description: 'Attempts in flight per subscription per instance; a receiver answering 2xx within 100 ms earns more, up to WEBHOOK_CONCURRENCY, so a slow receiver holds at most this many slots.' }),
  WEBHOOK_DISABLE_AFTER_MS: Type.Integer({ minimum: 1, maximum: MAX_WEBHOOK_MS, default: DEFAULT_DISABLE_AFTER_MS, description: 'A subscription whose deliveries have all failed for this many milliseconds is disabled.' }),
  WEBHOOK_RETENTION_MS: Type.Integer({ minimum: 1, maximum: MAX_WEBHOOK_MS, default: DEFAULT_RETENTION_MS, description: 'Finished delivery records are deleted after this many milliseconds.' }),
  WEBHOOK_POLL_INTERVAL_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: DEFAULT_POLL_INTERVAL_MS, description: 'How often due deliveries (retries, other instances\' events) are looked for; new events wake the dispatcher at once.' }),
  WEBHOOK_BUSY_INTERVAL_MS: Type.Integer({ minimum: 1, maximum: 60_000, default: DEFAULT_BUSY_INTERVAL_MS, description: 'While requests saturate the event loop, delivery attempts start at least this many milliseconds apart, one at a time.' }),
  WEBHOOK_MAX_SUBSCRIPTIONS: Type.Integer({
    minimum: 1,
    maximum: 100_000,
    default: DEFAULT_MAX_SUBSCRIPTIONS,
    description: 'The most webhook subscriptions one token may have; creating one more is a 409.'
  }),
  WEBHOOK_ALLOW_PRIVATE_URLS: Type.Unsafe<'0' | '1'>({ type: 'string', enum: ['0', '1'], default: '0', description: '`1`: subscriptions may point at loopback, private, link-local and other non-public addresses (local development and tests only).' }),
  // Public sandbox (docs/operations.md#running-a-public-sandbox).
  SANDBOX: Type.Unsafe<'0' | '1'>({ type: 'string', enum: ['0', '1'], default: '0', description: '`1`: a public sandbox: any bearer token of 16 to 256 URL-safe characters is a tenant with its own plants and subscriptions (no API_TOKENS, API_TOKENS_FILE or OIDC_ISSUER then).' }),
  SANDBOX_SEED: Type.Optional(Type.String({ minLength: 1, description: 'Sandbox: the plants a new tenant starts with, a JSON file of `[{"name": …, "tag": …}]`, or `none`; unset: a small built-in set.' })),
  SANDBOX_MAX_PLANTS: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 100, description: 'Sandbox: the most plants one tenant may hold (the same cap applies to every resource); creating one more is a 409.' }),
  SANDBOX_MAX_SUBSCRIPTIONS: Type.Integer({ minimum: 1, maximum: 1000, default: 5, description: 'Sandbox: the most webhook subscriptions one tenant may have; creating one more is a 409.' }),
  SANDBOX_MAX_TENANTS: Type.Integer({
    minimum: 1,
    maximum: 10_000_000,
    default: 10_000,
    description: 'Sandbox: the most tenants kept; a new one deletes the least recently used tenant unused for a ' +
      'minute (or a quarter of SANDBOX_TTL_MS), or is a 503 with Retry-After when there is none.'
  }),
  SANDBOX_OPEN_TENANTS: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: 'Sandbox: tenant stores kept open per instance (least recently used closed first); unset: 200 (on SQLite each costs about 0.5 MB under load; on PostgreSQL they share PG_POOL_MAX connections).' })),
  SANDBOX_OPEN_WAIT_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: OPEN_WAIT_MS, description: 'Sandbox: how long a request waits, in turn with others, for one of the SANDBOX_OPEN_TENANTS stores to be free before it is answered 503 with Retry-After.' }),
  SANDBOX_TTL_MS: Type.Integer({ minimum: 1000, maximum: 365 * 24 * 3_600_000, default: 24 * 3_600_000, description: 'Sandbox: a tenant unused for this many milliseconds is deleted with all its data (checked at least every half of it, and every minute).' }),
  SANDBOX_RATE_LIMIT_PER_ADDRESS: Type.Integer({ minimum: 0, default: 3000, description: 'Sandbox: requests per RATE_LIMIT_WINDOW per client address, whatever tokens it uses (RATE_LIMIT_MAX is the limit per tenant); 0: none.' }),
  SANDBOX_WEBHOOK_ATTEMPTS_PER_MINUTE: Type.Integer({ minimum: 1, maximum: 60_000, default: 30, description: 'Sandbox: the most webhook delivery attempts per minute per tenant, one at a time.' }),
  // OpenID Connect access tokens (docs/configuration.md).
  OIDC_ISSUER: Type.Optional(Type.String({
    minLength: 1,
    description: 'The OpenID provider whose JWT access tokens are accepted (its issuer URL; keys found through /.well-known/openid-configuration); unset: no JWTs.'
  })),
  OIDC_AUDIENCE: Type.Optional(Type.String({
    minLength: 1,
    description: 'The audience (`aud`) an access token must be issued for: this service\'s resource indicator; required with OIDC_ISSUER.'
  })),
  OIDC_CLOCK_SKEW_MS: Type.Integer({
    minimum: 0,
    maximum: 600_000,
    default: 30_000,
    description: 'How far the provider\'s clock may be off when checking a token\'s `exp`, `nbf` and `iat`, in milliseconds.'
  }),
  OIDC_JWKS_COOLDOWN_MS: Type.Integer({
    minimum: 0,
    maximum: 3_600_000,
    default: 30_000,
    description: 'The least time between two fetches of the provider\'s key set (a token with an unknown `kid`, or a ' +
      'signature that fails under a cached `kid`, triggers one), in milliseconds; after a failed fetch, at most 5 s.'
  }),
  OIDC_REQUIRE_AT_JWT: Type.Unsafe<'0' | '1'>({
    type: 'string',
    enum: ['0', '1'],
    default: '1',
    description: '`0` also accepts JWTs whose `typ` header is not `at+jwt` (RFC 9068), for providers that issue ' +
      'access tokens as plain `JWT`; an ID token of the same provider then passes too.'
  })
})

type Env = Static<typeof EnvSchema>

export interface Config {
  port: number
  host: string
  databaseUrl: string
  /** DATABASE_DIRECT_URL: PostgreSQL itself when databaseUrl is a transaction pooler (migrations, LISTEN). */
  databaseDirectUrl?: string
  pgPoolMax: number
  pgConnectTimeoutMs: number
  pgStatementTimeoutMs: number
  pgStartupTimeoutMs: number
  sqliteSynchronous: SqliteSynchronous
  /** Plain tokens (API_TOKENS, and bare lines of API_TOKENS_FILE): every scope. */
  tokens: string[]
  /** API_TOKENS_FILE entries with a name, scopes and the token's digest. */
  namedTokens: NamedToken[]
  /** OpenID Connect JWT access tokens, when OIDC_ISSUER is set. */
  oidc?: OidcConfig
  /** True when no token (and no OIDC_ISSUER) was configured and one was made up for this run. */
  tokenGenerated: boolean
  logLevel: LogLevel
  /** LOG_FORMAT; undefined: chosen by whether stdout is a terminal. */
  logFormat?: LogFormat
  /** Largest request body accepted, in bytes (413 beyond). */
  bodyLimit: number
  timeouts: { headers: number, request: number, connection: number, keepAlive: number }
  maxRequestsPerSocket: number
  shutdownGraceMs: number
  /** /health/ready answers 503 this long before the listener closes, so a balancer stops sending first. */
  shutdownDelayMs: number
  rateLimit: { max: number, windowMs: number }
  redis?: { url: string, keyPrefix: string }
  pressure: { maxEventLoopDelayMs: number, maxEventLoopUtilization: number, maxHeapUsedBytes: number, maxRssBytes: number }
  corsOrigins: string[]
  publicUrl?: string
  docs: { persistAuthorization: boolean }
  metrics?: { port: number, host: string }
  /**
   * OTLP trace export, when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set;
   * nothing is loaded otherwise. The OpenTelemetry SDK reads the OTEL_* variables itself, from
   * process.env: `tracesUrl` and `protocol` are what it will use, for logs and checks.
   */
  tracing?: { tracesUrl: string, protocol: OtlpProtocol, serviceName: string }
  /**
   * Fastify's `trustProxy`: false (the default: the socket's peer is the client), a hop count, or the
   * proxies' addresses/CIDRs. Decides `request.ip` (rate limits, logs) and `request.protocol`.
   */
  trustProxy: false | number | string[]
  webhooks: WebhookConfig
  /** SANDBOX=1: every valid-looking token is a tenant of its own. */
  sandbox?: SandboxConfig
  version: string
}

/** The public sandbox (the SANDBOX_* settings). */
export interface SandboxConfig {
  /** What a new tenant starts with (SANDBOX_SEED, read and checked at load). */
  seed: ReadonlyArray<Omit<NewPlant, 'id'>>
  maxPlants: number
  maxSubscriptions: number
  maxTenants: number
  openTenants: number
  openWaitMs: number
  ttlMs: number
  ratePerAddress: number
  webhookAttemptsPerMinute: number
}

/** Where JWT access tokens come from and how they are checked (the OIDC_* settings). */
export interface OidcConfig {
  /** The issuer exactly as tokens' `iss` and the discovery document name it. */
  issuer: string
  audience: string
  clockSkewMs: number
  jwksCooldownMs: number
  /** Only `typ: at+jwt` (RFC 9068), unless OIDC_REQUIRE_AT_JWT=0. */
  requireAtJwt: boolean
}

/** How webhooks are delivered (the WEBHOOK_* settings). */
export interface WebhookConfig {
  timeoutMs: number
  schedule: number[]
  concurrency: number
  perSubscription: number
  disableAfterMs: number
  retentionMs: number
  pollIntervalMs: number
  busyIntervalMs: number
  /** The most subscriptions one owner (token) may have. */
  maxSubscriptions: number
  /** Loopback, private, link-local ... receivers allowed (local development and tests only). */
  allowPrivate: boolean
}

/** Shorter bearer tokens are guessable in principle; refused unless ALLOW_WEAK_TOKENS=1. */
const MIN_TOKEN_LENGTH = 32

/**
 * The settings this service reads, from `env` only. An empty value is unset, for every setting
 * (`PORT=` in an env file, as .env.example leaves each line): the default applies.
 */
function settingsOf (env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] =>
    Object.hasOwn(EnvSchema.properties, entry[0]) && entry[1] !== undefined && entry[1] !== ''))
}

/** `PORT must be <= 65535`: each problem names the setting as the docs do; an enum's message lists its values. */
function settingProblems (err: Error & { errors?: ErrorObject[] }): string {
  if (err.errors === undefined) return err.message
  return err.errors.map((error) => {
    const name = error.instancePath.replace(/^\//, '')
    const allowed = (error.params as { allowedValues?: unknown }).allowedValues
    const values = error.keyword === 'enum' && Array.isArray(allowed) ? ` (${allowed.join(', ')})` : ''
    return `${name} ${error.message ?? 'is invalid'}${values}`
  }).join(', ')
}

/** Reads and validates the configuration; throws ConfigError with a message for whoever starts the service. */
export function loadConfig (env: NodeJS.ProcessEnv = process.env): Config {
  let parsed: Env
  try {
    parsed = envSchema<Env>({ schema: EnvSchema, data: settingsOf(env), env: false, dotenv: false })
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${settingProblems(err as Error & { errors?: ErrorObject[] })}`)
  }

  if (isPostgresUrl(parsed.DATABASE_URL)) {
    try {
      parsePostgresUrl(parsed.DATABASE_URL)
    } catch (err) {
      throw new ConfigError(`invalid configuration: ${(err as Error).message}`)
    }
  }
  if (parsed.DATABASE_DIRECT_URL !== undefined &&
      (!isPostgresUrl(parsed.DATABASE_URL) || !isPostgresUrl(parsed.DATABASE_DIRECT_URL))) {
    throw new ConfigError(
      'invalid configuration: DATABASE_DIRECT_URL must be a postgres:// URL, and DATABASE_URL one too')
  }

  const file = readTokensFile(parsed.API_TOKENS_FILE)
  const tokens = [...splitTokens(parsed.API_TOKENS, ',', 'API_TOKENS'), ...file.plain]
  refuseOverlap(tokens, file.named)
  const oidc = parseOidc(parsed)
  const sandbox = parseSandbox(parsed, tokens.length + file.named.length > 0 || oidc !== undefined)
  const tokenGenerated = sandbox === undefined && tokens.length === 0 && file.named.length === 0 && oidc === undefined
  if (tokenGenerated) tokens.push(randomBytes(32).toString('base64url'))
  if (parsed.ALLOW_WEAK_TOKENS !== '1' && tokens.some((token) => token.length < MIN_TOKEN_LENGTH)) {
    throw new ConfigError(`invalid configuration: every API token needs at least ${MIN_TOKEN_LENGTH} characters (set ALLOW_WEAK_TOKENS=1 for local trials only)`)
  }
  if (parsed.HEADERS_TIMEOUT_MS > parsed.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('invalid configuration: HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS')
  }
  const protocol = parsed.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? parsed.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf'
  const tracesUrl = otlpTracesUrl(parsed.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, parsed.OTEL_EXPORTER_OTLP_ENDPOINT, protocol)
  if (parsed.METRICS_PORT !== undefined && parsed.METRICS_PORT !== 0 && parsed.METRICS_PORT === parsed.PORT) {
    throw new ConfigError('invalid configuration: METRICS_PORT must differ from PORT (the API port never serves metrics)')
  }

  return {
    port: parsed.PORT,
    host: parsed.HOST,
    databaseUrl: parsed.DATABASE_URL,
    ...(parsed.DATABASE_DIRECT_URL !== undefined && { databaseDirectUrl: parsed.DATABASE_DIRECT_URL }),
    pgPoolMax: parsed.PG_POOL_MAX,
    pgConnectTimeoutMs: parsed.PG_CONNECT_TIMEOUT_MS,
    pgStatementTimeoutMs: parsed.PG_STATEMENT_TIMEOUT_MS,
    pgStartupTimeoutMs: parsed.PG_STARTUP_TIMEOUT_MS,
    sqliteSynchronous: parsed.SQLITE_SYNCHRONOUS,
    tokens: [...new Set(tokens)],
    namedTokens: file.named,
    ...(oidc !== undefined && { oidc }),
    tokenGenerated,
    logLevel: parsed.LOG_LEVEL,
    ...(parsed.LOG_FORMAT !== undefined && { logFormat: parsed.LOG_FORMAT }),
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
    ...(tracesUrl !== undefined && { tracing: { tracesUrl, protocol, serviceName: parsed.OTEL_SERVICE_NAME } }),
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
    ...(sandbox !== undefined && { sandbox }),
    version: PACKAGE_VERSION
  }
}

/** Anyone may call a sandbox: it has no tokens of its own, and its webhooks never reach private addresses. */
function parseSandbox (parsed: Env, hasCredentials: boolean): SandboxConfig | undefined {
  if (parsed.SANDBOX !== '1') return undefined
  if (hasCredentials) throw new ConfigError('invalid configuration: SANDBOX=1 accepts any token: unset API_TOKENS, API_TOKENS_FILE and OIDC_ISSUER')
  if (parsed.WEBHOOK_ALLOW_PRIVATE_URLS === '1') {
    throw new ConfigError('invalid configuration: WEBHOOK_ALLOW_PRIVATE_URLS=1 is refused with SANDBOX=1: a public sandbox must not reach private addresses')
  }
  // In memory no tenant could be closed without losing it: SANDBOX_OPEN_TENANTS would bound nothing.
  if (parsed.DATABASE_URL === ':memory:') {
    throw new ConfigError('invalid configuration: DATABASE_URL=:memory: is refused with SANDBOX=1: every tenant ' +
      'would stay in memory, beyond SANDBOX_OPEN_TENANTS; give a file path or a postgres:// URL')
  }
  const seed = parsed.SANDBOX_SEED?.trim()
  return {
    seed: loadSeed(seed === '' ? undefined : seed, parsed.SANDBOX_MAX_PLANTS),
    maxPlants: parsed.SANDBOX_MAX_PLANTS,
    maxSubscriptions: parsed.SANDBOX_MAX_SUBSCRIPTIONS,
    maxTenants: parsed.SANDBOX_MAX_TENANTS,
    openTenants: parsed.SANDBOX_OPEN_TENANTS ?? 200,
    openWaitMs: parsed.SANDBOX_OPEN_WAIT_MS,
    ttlMs: parsed.SANDBOX_TTL_MS,
    ratePerAddress: parsed.SANDBOX_RATE_LIMIT_PER_ADDRESS,
    webhookAttemptsPerMinute: parsed.SANDBOX_WEBHOOK_ATTEMPTS_PER_MINUTE
  }
}

/** Published in the OpenAPI document: no credentials, and no query or fragment (paths are appended). */
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

/** The build keeps package.json two levels above dist/src. */
const PACKAGE_VERSION = ((): string => {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown }
    return typeof pkg.version === 'string' ? pkg.version : 'unknown'
  } catch {
    return 'unknown'
  }
})()

/**
 * Where traces go, as the OpenTelemetry specification (and the SDK, which does the sending) has it:
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else the base OTEL_EXPORTER_OTLP_ENDPOINT plus
 * `/v1/traces` over HTTP. Both empty or unset: no tracing.
 */
function otlpTracesUrl (tracesEndpoint: string | undefined, endpoint: string | undefined, protocol: OtlpProtocol): string | undefined {
  const url = (name: string, value: string): URL => {
    let parsed: URL
    try {
      parsed = new URL(value)
    } catch {
      throw new ConfigError(`invalid configuration: ${name} must be an http:// or https:// URL`)
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConfigError(`invalid configuration: ${name} must be an http:// or https:// URL`)
    return parsed
  }
  const base = endpoint?.trim() === '' ? undefined : endpoint?.trim()
  const signal = tracesEndpoint?.trim() === '' ? undefined : tracesEndpoint?.trim()
  const baseUrl = base === undefined ? undefined : url('OTEL_EXPORTER_OTLP_ENDPOINT', base)
  if (signal !== undefined) return url('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', signal).href
  if (baseUrl === undefined) return undefined
  // gRPC names the service, not a path: the endpoint is used as it is.
  return protocol === 'grpc' ? baseUrl.href : `${baseUrl.href.replace(/\/+$/, '')}/v1/traces`
}

/** No retries at all is spelled `none`, so that it is never the accident of an empty value. */
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

const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/** `true` (trust anyone who sends the header) is refused: any client could choose its own address and escape its rate limit. */
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
  const everyone = trustsEveryone(entries.filter((entry) => !PROXY_RANGE_NAMES.has(entry)))
  if (everyone !== undefined) {
    throw new ConfigError(`invalid configuration: TRUST_PROXY ${JSON.stringify(value)} trusts every ${everyone} address, as \`true\` would: list only the proxies' addresses`)
  }
  return entries
}

/**
 * A prefix of 0 is refused as Fastify's proxy-addr refuses it at start-up (`check` and `serve`
 * must agree); a netmask after the slash is not accepted either.
 */
function isAddressOrCidr (entry: string): boolean {
  const [address = '', prefix, extra] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || extra !== undefined) return false
  if (prefix === undefined) return true
  if (!/^\d{1,3}$/.test(prefix)) return false
  const bits = Number(prefix)
  return bits >= 1 && bits <= (family === 4 ? 32 : 128)
}

/** `::ffff:0:0/96`, where proxy-addr matches IPv4 clients against IPv6 ranges (and IPv4 ranges land). */
const IPV4_MAPPED_FIRST = 0xffffn << 32n
const IPV4_MAPPED_LAST = IPV4_MAPPED_FIRST + 0xffffffffn
const IPV6_LAST = (1n << 128n) - 1n

/**
 * Whether the ranges together trust every IPv4 or every IPv6 client (`0.0.0.0/1,128.0.0.0/1`):
 * then any client could write its own address into X-Forwarded-For. Each range is placed in the
 * IPv6 space (IPv4 as IPv4-mapped, as proxy-addr compares them), merged, and the two spaces checked.
 */
function trustsEveryone (ranges: readonly string[]): 'IPv4' | 'IPv6' | undefined {
  const spans = ranges.map((range): [bigint, bigint] => {
    const [address, bits] = range.includes('/') ? ipaddr.parseCIDR(range) : [ipaddr.parse(range), -1]
    const v6 = address.kind() === 'ipv4' ? (address as ipaddr.IPv4).toIPv4MappedAddress() : address as ipaddr.IPv6
    const prefix = bits < 0 ? 128 : address.kind() === 'ipv4' ? 96 + bits : bits
    const first = v6.toByteArray().reduce((n, byte) => (n << 8n) | BigInt(byte), 0n) & ~((1n << BigInt(128 - prefix)) - 1n) & IPV6_LAST
    return [first, first + (1n << BigInt(128 - prefix)) - 1n]
  }).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  const covers = (from: bigint, to: bigint): boolean => {
    let next = from
    for (const [first, last] of spans) {
      if (first > next) break
      if (last >= next) next = last + 1n
      if (next > to) return true
    }
    return false
  }
  if (covers(0n, IPV6_LAST)) return 'IPv6'
  if (covers(IPV4_MAPPED_FIRST, IPV4_MAPPED_LAST)) return 'IPv4'
  return undefined
}

/**
 * A setting that is there but names no token (only separators, or a file of comments) is refused
 * rather than read as unset: unset makes up a token with every scope, and emptying the list is how
 * a key is revoked.
 */
function splitTokens (text: string | undefined, separator: string | RegExp, setting?: string): string[] {
  if (text === undefined) return []
  const tokens = text.split(separator).map((token) => token.trim()).filter((token) => token !== '')
  if (setting !== undefined && tokens.length === 0 && text.trim() !== '') {
    throw new ConfigError(`invalid configuration: ${setting} is set but holds no token (unset it to have none)`)
  }
  for (const token of tokens) {
    // A token travels in an HTTP header: only visible ASCII, as RFC 6750's b64token allows.
    if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(token)) {
      throw new ConfigError('invalid configuration: a token may only hold the characters A-Z a-z 0-9 - . _ ~ + / and trailing =')
    }
  }
  return tokens
}

/** A named entry's name: what the access log shows and its data is kept under. */
const TOKEN_NAME = /^[A-Za-z0-9._-]{1,64}$/
const DIGEST = /^sha256:([0-9a-fA-F]{64})$/

/**
 * API_TOKENS_FILE: one entry per line. A line of one word is a plain token (every scope), as
 * before scopes existed; `<name> <scope>[,<scope>…] sha256:<hex digest of the token>` is a named
 * entry (what `plant-store token` prints), which holds no token at all. Blank lines and lines
 * starting with `#` are skipped (no token can start with `#`).
 */
function readTokensFile (path: string | undefined): { plain: string[], named: NamedToken[] } {
  if (path === undefined) return { plain: [], named: [] }
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`invalid configuration: API_TOKENS_FILE cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}: ${path})`)
  }
  const plain: string[] = []
  const named: NamedToken[] = []
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) return
    const fields = line.split(/\s+/)
    if (fields.length === 1) {
      plain.push(...splitTokens(line, /\n/))
      return
    }
    const problem = (what: string) => new ConfigError(`invalid configuration: API_TOKENS_FILE line ${index + 1}: ${what}`)
    const [name = '', scopeList = '', digestField = ''] = fields
    if (fields.length !== 3) throw problem('a named entry is "<name> <scope>[,<scope>…] sha256:<hex digest>" (plant-store token prints one)')
    if (!TOKEN_NAME.test(name)) throw problem('a name is 1 to 64 of A-Z a-z 0-9 . _ -')
    if (named.some((entry) => entry.name === name)) throw problem(`the name ${name} is used twice`)
    const scopes = scopeList.split(',')
    const unknown = scopes.find((scope) => !isScope(scope))
    if (unknown !== undefined) throw problem(`unknown scope ${JSON.stringify(unknown)} (known: ${SCOPES.join(', ')})`)
    const digest = DIGEST.exec(digestField)?.[1]?.toLowerCase()
    if (digest === undefined) throw problem('the third field is sha256: and the token\'s 64 hex digit SHA-256')
    if (named.some((entry) => entry.digest === digest)) throw problem(`the same token digest as the entry ${named.find((entry) => entry.digest === digest)?.name ?? ''}`)
    named.push({ name, scopes: [...new Set(scopes as Scope[])], digest })
  })
  if (plain.length === 0 && named.length === 0) {
    throw new ConfigError(`invalid configuration: API_TOKENS_FILE holds no token (${path}); with no token nothing ` +
      'can call the API')
  }
  return { plain, named }
}

/** A plain token (every scope) that is also a named entry would get one of the two scope sets silently. */
function refuseOverlap (plain: readonly string[], named: readonly NamedToken[]): void {
  for (const token of plain) {
    const digest = tokenDigest(token)
    const entry = named.find((candidate) => candidate.digest === digest)
    if (entry !== undefined) {
      throw new ConfigError(`invalid configuration: the API_TOKENS_FILE entry ${entry.name} is also given as a plain ` +
        'token (every scope): keep one of the two')
    }
  }
}

/** Host names an http:// issuer may have: a provider on the same machine (development, tests). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * OIDC_ISSUER and OIDC_AUDIENCE: both or neither. The issuer is an https URL (http only on
 * loopback: keys fetched in clear from elsewhere could be anyone's), kept as written, since tokens'
 * `iss` must equal it exactly.
 */
function parseOidc (parsed: Env): OidcConfig | undefined {
  const issuer = parsed.OIDC_ISSUER?.trim() ?? ''
  if (issuer === '') {
    if (parsed.OIDC_AUDIENCE !== undefined) throw new ConfigError('invalid configuration: OIDC_AUDIENCE is set but OIDC_ISSUER is not')
    return undefined
  }
  let url: URL
  try {
    url = new URL(issuer)
  } catch {
    throw new ConfigError('invalid configuration: OIDC_ISSUER must be an absolute https URL (e.g. https://login.example.com)')
  }
  const secure = url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))
  if (!secure || url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new ConfigError('invalid configuration: OIDC_ISSUER must be an absolute https URL (e.g. https://login.example.com) without credentials, query or fragment; http only on loopback')
  }
  const audience = parsed.OIDC_AUDIENCE?.trim() ?? ''
  if (audience === '') throw new ConfigError('invalid configuration: OIDC_AUDIENCE must be set with OIDC_ISSUER (the audience tokens are issued for, e.g. https://plants.example.com)')
  return {
    issuer,
    audience,
    clockSkewMs: parsed.OIDC_CLOCK_SKEW_MS,
    jwksCooldownMs: parsed.OIDC_JWKS_COOLDOWN_MS,
    requireAtJwt: parsed.OIDC_REQUIRE_AT_JWT === '1'
  }
}
