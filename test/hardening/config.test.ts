import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError } from '../../src/errors.js'
import { loadConfig } from '../../src/load-config.js'

test('hardening settings: defaults', () => {
  const config = loadConfig({})
  assert.equal(config.bodyLimit, 16 * 1024)
  assert.deepEqual(config.timeouts, { headers: 10_000, request: 30_000, connection: 120_000, keepAlive: 72_000 })
  assert.equal(config.maxRequestsPerSocket, 1000)
  assert.equal(config.shutdownGraceMs, 10_000)
  assert.deepEqual(config.rateLimit, { max: 1000, windowMs: 60_000 })
  assert.equal(config.redis, undefined)
  assert.deepEqual(config.pressure, { maxEventLoopDelayMs: 1000, maxEventLoopUtilization: 0, maxHeapUsedBytes: 0, maxRssBytes: 0 })
  assert.deepEqual(config.corsOrigins, [])
})

test('hardening settings: read from the environment, bad values stop the start', () => {
  const config = loadConfig({
    REDIS_URL: 'redis://127.0.0.1:6379/2', REDIS_KEY_PREFIX: 'ps:', CORS_ORIGINS: ' https://a.example ,https://b.example,', RATE_LIMIT_MAX: '0'
  })
  assert.deepEqual(config.redis, { url: 'redis://127.0.0.1:6379/2', keyPrefix: 'ps:' })
  assert.deepEqual(config.corsOrigins, ['https://a.example', 'https://b.example'])
  assert.equal(config.rateLimit.max, 0)
  const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{ BODY_LIMIT: '0' }, /BODY_LIMIT must be >= 1/],
    [{ RATE_LIMIT_MAX: '-1' }, /RATE_LIMIT_MAX must be >= 0/],
    [{ MAX_EVENT_LOOP_UTILIZATION: '2' }, /MAX_EVENT_LOOP_UTILIZATION must be <= 1/],
    [{ ALLOW_WEAK_TOKENS: 'yes' }, /ALLOW_WEAK_TOKENS must be equal to one of the allowed values/],
    [{ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '1000' }, /HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS/]
  ]
  for (const [env, message] of cases) {
    assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && message.test(err.message), JSON.stringify(env))
  }
})
