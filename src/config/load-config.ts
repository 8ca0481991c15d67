import { Type, type Static } from '@sinclair/typebox'
import type { ErrorObject } from 'ajv'
import envSchema from 'env-schema'
import { BUILD_INFO } from './build-info.js'
import { ConfigError } from '../lib/errors.js'
import { OIDC_SETTINGS, oidcConfig } from '../auth/oidc-settings.js'
import { SANDBOX_SETTINGS, sandboxConfig } from '../sandbox/settings.js'
import { checkDatabaseSettings, DATABASE_SETTINGS, DATABASE_URL_SETTING } from '../store/settings.js'
import { configuredTokens, refuseEmptyTokenSettings } from '../auth/token-settings.js'
import { TRACING_SETTINGS, tracingConfig } from './tracing-settings.js'
import { parseTrustProxy } from './trust-proxy.js'
import { WEBHOOK_SETTINGS, webhookConfig } from '../webhooks/settings.js'
import { flagSetting, integerSetting, stringSetting } from './setting-types.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]
const LOG_FORMATS = ['json', 'pretty'] as const
type LogFormat = (typeof LOG_FORMATS)[number]

/**
 * How long past SHUTDOWN_DELAY_MS + SHUTDOWN_GRACE_MS a stopping process may take to close the database and flush
 * its log before it exits regardless. A supervisor's grace period (Kubernetes, compose) must cover all three.
 */
export const SHUTDOWN_EXIT_MARGIN_MS = 3000

/** The environment variables plant-store reads, validated once at start-up. */
export const EnvSchema = Type.Object({
  PORT: integerSetting({ minimum: 0, maximum: 65535, default: 3000 }, 'TCP port to listen on (0 picks a free one).'),
  HOST: stringSetting({ minLength: 1, default: '127.0.0.1' }, 'Address to listen on (`0.0.0.0` for all interfaces).'),
  DATABASE_URL: DATABASE_URL_SETTING,
  API_TOKENS: Type.Optional(Type.String({
    description:
      'Accepted bearer tokens, comma-separated, each with every scope. Set but holding no token (empty, blank or ' +
      'only commas) stops the start. With no token configured and no `OIDC_ISSUER`, the start is refused, but ' +
      'at a terminal, where a token is made up for the run and shown there once.'
  })),
  API_TOKENS_FILE: Type.Optional(stringSetting({ minLength: 1 },
    'A file of accepted bearer tokens (combined with `API_TOKENS`): a plain token a line (every scope), ' +
    'or a named entry `<name> <scopes> sha256:<digest>` (see docs/configuration.md). Set but empty, a file ' +
    'without a token, or with a plain token that is also a named entry, or names differing only in case, stops ' +
    'the start.')),
  ...DATABASE_SETTINGS,
  LOG_LEVEL: Type.Unsafe<LogLevel>({
    type: 'string',
    enum: LOG_LEVELS,
    default: 'info',
    description: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`.'
  }),
  LOG_FORMAT: Type.Optional(Type.Unsafe<LogFormat>({
    type: 'string',
    enum: LOG_FORMATS,
    description:
      'How log lines are written to stdout: json (one JSON object a line) or pretty (for a person); unset, pretty ' +
      'on a terminal and json otherwise.'
  })),
  ALLOW_WEAK_TOKENS: flagSetting('0',
    '`1` accepts tokens shorter than 32 characters (local trials only; otherwise they stop the start).'),
  // Limits and timeouts (docs/operations.md).
  BODY_LIMIT: integerSetting({ minimum: 1, default: 16 * 1024 }, 'Largest request body in bytes; larger is 413.'),
  HEADERS_TIMEOUT_MS: integerSetting({ minimum: 1, default: 10_000 },
    'The request headers must arrive within this many milliseconds (else 408 and the connection is closed).'),
  REQUEST_TIMEOUT_MS: integerSetting({ minimum: 1, default: 30_000 },
    'The whole request (headers and body) must arrive within this many milliseconds.'),
  CONNECTION_TIMEOUT_MS: integerSetting({ minimum: 0, default: 120_000 },
    'A socket with no traffic for this many milliseconds is closed (0: never; keep it above `KEEP_ALIVE_TIMEOUT_MS`).'),
  KEEP_ALIVE_TIMEOUT_MS: integerSetting({ minimum: 1, default: 72_000 },
    "An idle keep-alive connection is closed after this many milliseconds (above common load balancers' 60 s)."),
  MAX_REQUESTS_PER_SOCKET: integerSetting({ minimum: 0, default: 1000 },
    'Requests one connection may carry; the last answer says `Connection: close` (0: no limit).'),
  SHUTDOWN_GRACE_MS: integerSetting({ minimum: 0, default: 10_000 },
    'On SIGTERM or SIGINT, how long in-flight requests may take before their connections are cut.'),
  SHUTDOWN_DELAY_MS: integerSetting({ minimum: 0, maximum: 600_000, default: 0 },
    'On SIGTERM or SIGINT, how long to keep serving while `/health/ready` already answers 503, before the drain ' +
    '(for balancers that poll readiness).'),
  RATE_LIMIT_MAX: integerSetting({ minimum: 0, default: 1000 },
    'Requests per window per token (per client address without a valid token); 0 turns rate limiting off.'),
  RATE_LIMIT_WINDOW: integerSetting({ minimum: 0, default: 60_000 },
    'The rate-limit window in milliseconds; 0 turns rate limiting off.'),
  REDIS_URL: Type.Optional(stringSetting({ minLength: 1 },
    'A Redis URL (`redis://127.0.0.1:6379`): rate-limit counters shared by every instance. Unreachable, the ' +
    'limiter fails open.')),
  REDIS_KEY_PREFIX: stringSetting({ default: 'plant-store:' },
    'Prefix of every Redis key (rate limits use `<prefix>rate-limit:`).'),
  MAX_EVENT_LOOP_DELAY_MS: integerSetting({ minimum: 0, default: 1000 },
    'Shed load (503) while the mean event-loop delay exceeds this many milliseconds; 0: off.'),
  MAX_EVENT_LOOP_UTILIZATION: Type.Number({
    minimum: 0, maximum: 1, default: 0, description: 'Shed load above this event-loop utilization (0 to 1); 0: off.'
  }),
  MAX_HEAP_USED_BYTES: integerSetting({ minimum: 0, default: 0 }, 'Shed load above this V8 heap use in bytes; 0: off.'),
  MAX_RSS_BYTES: integerSetting({ minimum: 0, default: 0 }, 'Shed load above this resident memory in bytes; 0: off.'),
  CORS_ORIGINS: stringSetting({ default: '' },
    'Comma-separated browser origins allowed by CORS (`*`: any); empty: CORS off.'),
  PUBLIC_URL: Type.Optional(stringSetting({ minLength: 1 },
    'Where clients reach the service (an absolute http(s) URL without credentials, query or fragment): the ' +
    "OpenAPI document's `servers`; unset: `/`.")),
  DOCS_PERSIST_AUTHORIZATION: flagSetting('0',
    "`1`: Swagger UI keeps the token you authorize with in the browser's localStorage across reloads."),
  // Operations (docs/operations.md).
  METRICS_PORT: Type.Optional(integerSetting({ minimum: 0, maximum: 65535 },
    'Serve Prometheus metrics at `GET /metrics` on this port, on a listener of its own; unset: no metrics at all.')),
  METRICS_HOST: stringSetting({ minLength: 1, default: '127.0.0.1' },
    'Address of the metrics listener (`0.0.0.0` for a Prometheus on another host).'),
  ...TRACING_SETTINGS,
  TRUST_PROXY: stringSetting({ default: '' },
    'The reverse proxies whose `X-Forwarded-For`/`-Proto` to believe: a hop count, or comma-separated addresses or ' +
    'CIDRs (`loopback` too); empty: none.'),
  ...WEBHOOK_SETTINGS,
  ...SANDBOX_SETTINGS,
  ...OIDC_SETTINGS
})

type Env = Static<typeof EnvSchema>

/** The settings a process runs with: what loadConfig makes of the environment. */
export type Config = ReturnType<typeof loadConfig>

/** Shorter bearer tokens are guessable in principle; refused unless ALLOW_WEAK_TOKENS=1. */
const MIN_TOKEN_LENGTH = 32

/** The settings this service reads, from `env` only; an empty value (`PORT=` in an env file) is unset. */
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
export function loadConfig (env: NodeJS.ProcessEnv = process.env) {
  refuseEmptyTokenSettings(env)
  let parsed: Env
  try {
    parsed = envSchema<Env>({ schema: EnvSchema, data: settingsOf(env), env: false, dotenv: false })
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${settingProblems(err as Error & { errors?: ErrorObject[] })}`)
  }

  checkDatabaseSettings(parsed)
  const { plain: tokens, named } = configuredTokens(parsed.API_TOKENS, parsed.API_TOKENS_FILE)
  const oidc = oidcConfig(parsed)
  const sandbox = sandboxConfig(parsed, tokens.length + named.length > 0 || oidc !== undefined)
  if (parsed.ALLOW_WEAK_TOKENS !== '1' && tokens.some((token) => token.length < MIN_TOKEN_LENGTH)) {
    throw new ConfigError(
      `invalid configuration: every API token needs at least ${MIN_TOKEN_LENGTH} characters (set ALLOW_WEAK_TOKENS=1 ` +
      'for local trials only)'
    )
  }
  if (parsed.HEADERS_TIMEOUT_MS > parsed.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('invalid configuration: HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS')
  }
  const tracing = tracingConfig(parsed)
  if (parsed.METRICS_PORT !== 0 && parsed.METRICS_PORT === parsed.PORT) {
    throw new ConfigError(
      'invalid configuration: METRICS_PORT must differ from PORT (the API port never serves metrics)'
    )
  }

  return {
    port: parsed.PORT,
    host: parsed.HOST,
    databaseUrl: parsed.DATABASE_URL,
    // PostgreSQL itself when databaseUrl is a transaction pooler (migrations, LISTEN).
    ...(parsed.DATABASE_DIRECT_URL !== undefined && { databaseDirectUrl: parsed.DATABASE_DIRECT_URL }),
    pgPoolMax: parsed.PG_POOL_MAX,
    pgConnectTimeoutMs: parsed.PG_CONNECT_TIMEOUT_MS,
    pgStatementTimeoutMs: parsed.PG_STATEMENT_TIMEOUT_MS,
    pgStartupTimeoutMs: parsed.PG_STARTUP_TIMEOUT_MS,
    // False: `serve` applies no migration and refuses a schema behind its own.
    migrateOnStart: parsed.MIGRATE_ON_START === '1',
    sqliteSynchronous: parsed.SQLITE_SYNCHRONOUS,
    // Plain tokens (API_TOKENS, and bare lines of API_TOKENS_FILE): every scope.
    tokens: [...new Set(tokens)],
    namedTokens: named,
    ...(oidc !== undefined && { oidc }),
    // No token (nor OIDC_ISSUER) was configured and one was made up for this run (withTrialToken).
    tokenGenerated: false,
    logLevel: parsed.LOG_LEVEL,
    // Unset: chosen by whether stdout is a terminal.
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
    // /health/ready answers 503 this long before the listener closes, so a balancer stops sending first.
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
    // The OpenTelemetry SDK reads the OTEL_* variables itself: this says what it will use, for logs and checks.
    ...(tracing !== undefined && { tracing }),
    // False (the socket's peer is the client), a hop count, or the proxies' addresses/CIDRs.
    trustProxy: parseTrustProxy(parsed.TRUST_PROXY),
    webhooks: webhookConfig(parsed),
    ...(sandbox !== undefined && { sandbox }),
    version: BUILD_INFO.version
  }
}

/** Published in the OpenAPI document: no credentials, and no query or fragment (paths are appended). */
function parsePublicUrl (text: string): string {
  const problem = (what: string) =>
    new ConfigError(`invalid configuration: PUBLIC_URL ${what} (e.g. https://plants.example.com)`)
  const url = URL.canParse(text) ? new URL(text) : undefined
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw problem('must be an absolute http or https URL')
  }
  if (url.username !== '' || url.password !== '') throw problem('must not carry credentials')
  if (text.includes('?') || text.includes('#')) throw problem('must have no query string or fragment')
  return url.href.replace(/\/+$/, '')
}
