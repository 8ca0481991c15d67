import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError } from '../../../src/lib/errors.js'
import { EnvSchema, loadConfig } from '../../../src/config/load-config.js'
import { TOKEN } from '../../helpers/app.js'
import { assertConfigRefused } from '../../helpers/config.js'

test('defaults: port 3000 on 127.0.0.1, data/plants.db, full sync, info logs, no token (serve ' +
  'decides: withTrialToken)', () => {
  const config = loadConfig({})
  assert.equal(config.port, 3000)
  assert.equal(config.host, '127.0.0.1')
  assert.equal(config.databaseUrl, 'data/plants.db')
  assert.equal(config.sqliteSynchronous, 'full')
  assert.equal(config.logLevel, 'info')
  assert.equal(config.tokenGenerated, false)
  assert.deepEqual(config.tokens, [])
})

test('values are read from the environment', () => {
  const config = loadConfig({
    PORT: '8080',
    HOST: '0.0.0.0',
    DATABASE_URL: ':memory:',
    API_TOKENS: ' a-token , b-token ,, ',
    LOG_LEVEL: 'warn',
    SQLITE_SYNCHRONOUS: 'normal',
    ALLOW_WEAK_TOKENS: '1'
  })
  const {
    port, host, databaseUrl, sqliteSynchronous, tokens, tokenGenerated, logLevel, pgPoolMax,
    pgConnectTimeoutMs
  } = config
  assert.deepEqual({
    port,
    host,
    databaseUrl,
    sqliteSynchronous,
    tokens,
    tokenGenerated,
    logLevel,
    pgPoolMax,
    pgConnectTimeoutMs
  }, {
    port: 8080,
    host: '0.0.0.0',
    databaseUrl: ':memory:',
    sqliteSynchronous: 'normal',
    tokens: ['a-token', 'b-token'],
    tokenGenerated: false,
    logLevel: 'warn',
    pgPoolMax: 10,
    pgConnectTimeoutMs: 5000
  })
})

test('a bad value stops the start with a message that names the variable', () => {
  const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{ PORT: 'eighty' }, /PORT must be integer/],
    [{ PORT: '70000' }, /PORT must be <= 65535/],
    [{ LOG_LEVEL: 'verbose' }, /LOG_LEVEL must be equal to one of the allowed values/],
    [{ SQLITE_SYNCHRONOUS: 'off' }, /SQLITE_SYNCHRONOUS must be equal to one of the allowed values/],
    [{ PORT: '70000', HOST: ' ' }, /^invalid configuration: PORT must be <= 65535$/],
    [{ PORT: '-1', LOG_LEVEL: 'x' },
      new RegExp(/^invalid configuration: PORT must be >= 0, LOG_LEVEL must be equal to one of the allowed /.source +
        /values \(fatal, error, warn, info, debug, trace, silent\)$/.source)],
    [{ API_TOKENS_FILE: '/nonexistent/tokens' }, /API_TOKENS_FILE cannot be read \(ENOENT: \/nonexistent\/tokens\)/],
    [{ API_TOKENS: 'has space inside' }, /a token may only hold the characters/],
    [{ PG_POOL_MAX: '0' }, /PG_POOL_MAX must be >= 1/],
    [{ PG_CONNECT_TIMEOUT_MS: 'soon' }, /PG_CONNECT_TIMEOUT_MS must be integer/],
    [{ PG_STATEMENT_TIMEOUT_MS: '0' }, /PG_STATEMENT_TIMEOUT_MS must be >= 100/],
    [{ PG_STATEMENT_TIMEOUT_MS: 'forever' }, /PG_STATEMENT_TIMEOUT_MS must be integer/],
    [{ PG_STATEMENT_TIMEOUT_MS: '600001' }, /PG_STATEMENT_TIMEOUT_MS must be <= 600000/],
    [{ DATABASE_URL: 'postgres://db.example/plants?schema=Bad-Name' },
      /DATABASE_URL schema must be a lower-case SQL name/],
    [{ DATABASE_URL: 'postgres://db.example/plants?schema=pg_catalog' },
      new RegExp(/DATABASE_URL schema pg_catalog is PostgreSQL's own \(pg_… and information_schema are /.source +
        /reserved\): choose another name$/.source)],
    [{ DATABASE_URL: 'postgres://db.example/plants?schema=information_schema' },
      /DATABASE_URL schema information_schema is PostgreSQL's own/],
    [{ DATABASE_URL: 'data/plants.db', DATABASE_DIRECT_URL: 'postgres://db.example/plants' },
      /DATABASE_DIRECT_URL must be a postgres:\/\/ URL, and DATABASE_URL one too$/],
    [{ DATABASE_URL: 'postgres://pooler.example/plants', DATABASE_DIRECT_URL: 'db.example' },
      /DATABASE_DIRECT_URL must be a postgres:\/\/ URL/],
    [{ DATABASE_URL: 'postgres://[broken' }, /DATABASE_URL is not a valid postgres:\/\/ URL/],
    [{ BODY_LIMIT: '0' }, /BODY_LIMIT must be >= 1/],
    [{ RATE_LIMIT_MAX: '-1' }, /RATE_LIMIT_MAX must be >= 0/],
    [{ MAX_EVENT_LOOP_UTILIZATION: '2' }, /MAX_EVENT_LOOP_UTILIZATION must be <= 1/],
    [{ ALLOW_WEAK_TOKENS: 'yes' }, /ALLOW_WEAK_TOKENS must be equal to one of the allowed values/],
    [{ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '1000' },
      /HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS/]
  ]
  assertConfigRefused(cases)
})

test('DATABASE_URL: a SQLite path, :memory: or a postgres(ql):// URL; any other scheme stops ' +
  'the start naming the setting, never the rest', () => {
  const refusal = (scheme: string) => new RegExp(`^invalid configuration: DATABASE_URL starts with ${scheme}:, a ` +
    'form it does not take: ' +
    'a SQLite file path \\(data/plants\\.db, /var/lib/plant-store/plants\\.db; \\./ before a name holding a ' +
      'colon\\), :memory:, or a postgres:// or postgresql:// URL$')
  assertConfigRefused([
    [{ API_TOKENS: TOKEN, DATABASE_URL: 'file:/var/lib/plants.db' }, refusal('file')],
    [{ API_TOKENS: TOKEN, DATABASE_URL: 'sqlite:///var/lib/plants.db' }, refusal('sqlite')],
    [{ API_TOKENS: TOKEN, DATABASE_URL: 'postgres:/x' }, refusal('postgres')],
    [{ API_TOKENS: TOKEN, DATABASE_URL: 'postgresql:db.example/plants' }, refusal('postgresql')],
    [{ API_TOKENS: TOKEN, DATABASE_URL: 'postgre://app:secret@db.example/plants' }, refusal('postgre')],
    [{ API_TOKENS: TOKEN, DATABASE_URL: 'file::memory:' }, refusal('file')]
  ])
  for (const url of ['data/plants.db', '/var/lib/plant-store/plants.db', './plants:2.db', ':memory:', 'plants.db',
    'postgres://db.example/plants', 'postgresql://db.example/plants', 'POSTGRES://db.example/plants']) {
    assert.equal(loadConfig({ API_TOKENS: TOKEN, DATABASE_URL: url }).databaseUrl, url)
  }
})

test('DATABASE_DIRECT_URL: PostgreSQL itself beside a pooler\'s DATABASE_URL', () => {
  const config = loadConfig({
    API_TOKENS: TOKEN,
    DATABASE_URL: 'postgres://app@pooler.example:6432/plants',
    DATABASE_DIRECT_URL: 'postgres://app@db.example/plants'
  })
  assert.equal(config.databaseDirectUrl, 'postgres://app@db.example/plants')
  assert.equal(loadConfig({ API_TOKENS: TOKEN, DATABASE_URL: 'postgres://app@db.example/plants' }).databaseDirectUrl,
    undefined)
})

test('an empty value is unset, for every setting but the token settings: its default applies', () => {
  const empty = Object.fromEntries(Object.keys(EnvSchema.properties).map((name) => [name, '']))
  delete empty.API_TOKENS_FILE
  assert.deepEqual(loadConfig({ ...empty, API_TOKENS: TOKEN }), loadConfig({ API_TOKENS: TOKEN }))
  const config = loadConfig({ PORT: '', HOST: '', METRICS_PORT: '', LOG_FORMAT: '' })
  assert.equal(config.port, 3000)
  assert.equal(config.host, '127.0.0.1')
  assert.equal(config.metrics, undefined)
  assert.equal(config.logFormat, undefined)
})

test('a bad token never appears in the error message', () => {
  assert.throws(() => loadConfig({ API_TOKENS: 'secret with spaces' }), (err: unknown) => {
    assert.ok(err instanceof Error)
    assert.doesNotMatch(err.message, /secret/)
    return true
  })
})

test('PostgreSQL settings: a postgres:// URL with a schema, pool size and connect timeout', () => {
  const config = loadConfig({
    DATABASE_URL: 'postgresql://app@db.example:5432/plants?schema=plant_store',
    PG_POOL_MAX: '25',
    PG_CONNECT_TIMEOUT_MS: '1500',
    PG_STATEMENT_TIMEOUT_MS: '2500'
  })
  assert.equal(config.databaseUrl, 'postgresql://app@db.example:5432/plants?schema=plant_store')
  assert.equal(config.pgPoolMax, 25)
  assert.equal(config.pgConnectTimeoutMs, 1500)
  assert.equal(config.pgStatementTimeoutMs, 2500)
  assert.equal(loadConfig({}).pgStatementTimeoutMs, 5000, 'every statement is bounded by default')
})

test('a configured token shorter than 32 characters stops the start unless ALLOW_WEAK_TOKENS=1', () => {
  assert.throws(() => loadConfig({ API_TOKENS: `${TOKEN},short-token` }), (err: unknown) =>
    err instanceof ConfigError && /at least 32 characters/.test(err.message) && !err.message.includes('short-token'))
  assert.deepEqual(loadConfig({ API_TOKENS: 'short-token', ALLOW_WEAK_TOKENS: '1' }).tokens, ['short-token'])
  assert.equal(loadConfig({ API_TOKENS: 'a'.repeat(32) }).tokens[0], 'a'.repeat(32))
})

test('hardening settings: defaults', () => {
  const config = loadConfig({})
  assert.equal(config.bodyLimit, 16 * 1024)
  assert.deepEqual(config.timeouts, { headers: 10_000, request: 30_000, connection: 120_000, keepAlive: 72_000 })
  assert.equal(config.maxRequestsPerSocket, 1000)
  assert.equal(config.shutdownGraceMs, 10_000)
  assert.deepEqual(config.rateLimit, { max: 1000, windowMs: 60_000 })
  assert.equal(config.redis, undefined)
  assert.deepEqual(config.pressure, {
    maxEventLoopDelayMs: 1000,
    maxEventLoopUtilization: 0,
    maxHeapUsedBytes: 0,
    maxRssBytes: 0
  })
  assert.deepEqual(config.corsOrigins, [])
})

test('hardening settings: read from the environment', () => {
  const config = loadConfig({
    REDIS_URL: 'redis://127.0.0.1:6379/2',
    REDIS_KEY_PREFIX: 'ps:',
    CORS_ORIGINS: ' https://a.example ,https://b.example,',
    RATE_LIMIT_MAX: '0'
  })
  assert.deepEqual(config.redis, { url: 'redis://127.0.0.1:6379/2', keyPrefix: 'ps:' })
  assert.deepEqual(config.corsOrigins, ['https://a.example', 'https://b.example'])
  assert.equal(config.rateLimit.max, 0)
})
