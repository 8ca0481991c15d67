import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { Redis } from 'ioredis'
import { AUTH, buildTestApp, TOKEN } from '../helpers/app.js'
import { NO_REDIS, TEST_REDIS_URL } from '../helpers/redis.js'

const LIMITED = { RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW: '60000' }
const del = (app: FastifyInstance, headers: Record<string, string> = AUTH,
  remoteAddress = '127.0.0.1'): Promise<LightMyRequestResponse> =>
  app.inject({ method: 'DELETE', url: '/plants/1', headers, remoteAddress })

function assertLimited (res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 429)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  assert.deepEqual(res.json(), { error: 429, message: 'Rate limit exceeded, retry in 1 minute' })
  assert.equal(res.headers['ratelimit-limit'], '3')
  assert.equal(res.headers['ratelimit-remaining'], '0')
  assert.equal(res.headers['retry-after'], '60')
  assert.equal(res.headers['ratelimit-reset'], '60')
}

test('a token gets RATE_LIMIT_MAX requests per window, then 429 in the Error shape with Retry-After', async (t) => {
  const app = await buildTestApp(t, LIMITED)
  for (const remaining of ['2', '1', '0']) {
    const res = await del(app)
    assert.equal(res.statusCode, 404)
    assert.equal(res.headers['ratelimit-limit'], '3')
    assert.equal(res.headers['ratelimit-remaining'], remaining)
  }
  // Counted per token, whatever the client's address.
  assertLimited(await del(app, AUTH, '10.0.0.9'))
  // Another client (no token, or a wrong one) has its own, per-IP bucket.
  assert.equal((await del(app, {})).statusCode, 401)
})

test('failed-auth attempts are limited per IP, whatever token they try (no brute force)', async (t) => {
  const app = await buildTestApp(t, LIMITED)
  const guess = (): Record<string, string> => ({ authorization: `Bearer ${randomBytes(24).toString('base64url')}` })
  for (let i = 0; i < 3; i++) assert.equal((await del(app, guess(), '10.0.0.1')).statusCode, 401)
  assertLimited(await del(app, guess(), '10.0.0.1'))
  assertLimited(await del(app, {}, '10.0.0.1'))
  // The valid token from the same address is not punished, another address is not either.
  assert.equal((await del(app, AUTH, '10.0.0.1')).statusCode, 404)
  assert.equal((await del(app, guess(), '10.0.0.2')).statusCode, 401)
})

test('/health is not rate-limited; unknown routes and /openapi.json are', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_MAX: '1' })
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ method: 'GET', url: '/health' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['ratelimit-limit'], undefined)
  }
  assert.equal((await app.inject({ method: 'GET', url: '/openapi.json' })).statusCode, 200)
  assert.equal((await app.inject({ method: 'GET', url: '/nope' })).statusCode, 429)
})

test('RATE_LIMIT_MAX=0 or RATE_LIMIT_WINDOW=0 turns rate limiting off', async (t) => {
  for (const env of [{ RATE_LIMIT_MAX: '0' }, { RATE_LIMIT_MAX: '1', RATE_LIMIT_WINDOW: '0' }]) {
    const app = await buildTestApp(t, env)
    for (let i = 0; i < 3; i++) {
      const res = await del(app)
      assert.equal(res.statusCode, 404)
      assert.equal(res.headers['ratelimit-limit'], undefined)
    }
  }
})

const REDIS_URL = TEST_REDIS_URL ?? ''

test('with REDIS_URL, instances share one limit; keys hold a hash of the token, never the token',
  { skip: NO_REDIS }, async (t) => {
    const prefix = `plant-store-test-${randomBytes(6).toString('hex')}:`
    const env = { ...LIMITED, REDIS_URL, REDIS_KEY_PREFIX: prefix }
    const a = await buildTestApp(t, env)
    const b = await buildTestApp(t, env)
    const redis = new Redis(REDIS_URL)
    t.after(async () => {
      const keys = await redis.keys(`${prefix}*`)
      if (keys.length > 0) await redis.del(...keys)
      redis.disconnect()
    })

    assert.equal((await del(a)).statusCode, 404)
    assert.equal((await del(b)).statusCode, 404)
    assert.equal((await del(a)).statusCode, 404)
    assertLimited(await del(b))
    assertLimited(await del(a))

    const keys = await redis.keys(`${prefix}*`)
    assert.equal(keys.length, 1)
    assert.match(keys[0] ?? '', new RegExp(`^${prefix}rate-limit:token:[0-9a-f]{64}$`))
    assert.equal(keys.some((key) => key.includes(TOKEN)), false)
  })

test('a lost Redis does not fail requests: the limiter fails open', async (t) => {
  // Nothing listens on port 1: the client never connects.
  const app = await buildTestApp(t, { ...LIMITED, REDIS_URL: 'redis://127.0.0.1:1', REDIS_KEY_PREFIX: 'unused:' })
  // More than RATE_LIMIT_MAX, none refused, none failed.
  for (let i = 0; i < 5; i++) assert.equal((await del(app)).statusCode, 404)
})

test('Redis dropping the connection mid-run: requests still pass (fail open), and limits come back with it',
  { timeout: 10_000, skip: NO_REDIS }, async (t) => {
    const prefix = `plant-store-test-${randomBytes(6).toString('hex')}:`
    const app = await buildTestApp(t, { ...LIMITED, REDIS_URL, REDIS_KEY_PREFIX: prefix })
    const admin = new Redis(REDIS_URL)
    t.after(async () => {
      const keys = await admin.keys(`${prefix}*`)
      if (keys.length > 0) await admin.del(...keys)
      admin.disconnect()
    })
    assert.equal((await del(app)).headers['ratelimit-remaining'], '2')

    // Cut this app's connection (and only it) from the server side.
    const clients = String(await admin.client('LIST')).split('\n').filter(
      (line) => line.includes(` name=${prefix}rate-limit `))
    assert.equal(clients.length, 1)
    await admin.client('KILL', 'ID', /id=(\d+)/.exec(clients[0] ?? '')?.[1] ?? '')
    // While it reconnects, requests go through (uncounted) or are counted again: never a failure.
    let res = await del(app)
    while (res.statusCode !== 429) {
      assert.equal(res.statusCode, 404, res.body)
      // inject does no I/O: give the client's reconnect a turn of the event loop.
      await new Promise((resolve) => setTimeout(resolve, 10))
      res = await del(app)
    }
    // Back: the shared limit applies again.
    assertLimited(res)
    assert.equal(await admin.get((await admin.keys(`${prefix}rate-limit:*`))[0] ?? ''), '4')
  })
