import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../../helpers/app.js'
import { assertError, JSON_TYPE } from '../../helpers/plants.js'

test('GET /health/live and /health/ready answer 200 {"status":"ok"} without a token', async (t) => {
  const app = await buildTestApp(t)
  for (const url of ['/health/live', '/health/ready']) {
    const res = await app.inject({ url })
    assert.equal(res.statusCode, 200, url)
    assert.equal(res.headers['content-type'], JSON_TYPE)
    assert.equal(res.headers['retry-after'], undefined)
    assert.deepEqual(res.json(), { status: 'ok' })
  }
})

test('the probes are not rate limited', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_MAX: '1' })
  for (let i = 0; i < 5; i++) {
    for (const url of ['/health/live', '/health/ready']) {
      const res = await app.inject({ url })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['ratelimit-limit'], undefined)
    }
  }
  // The API itself still is.
  assert.equal((await app.inject({ url: '/plants', headers: AUTH })).statusCode, 200)
  assert.equal((await app.inject({ url: '/plants', headers: AUTH })).statusCode, 429)
})

test('ready answers 503 with Retry-After when the database does not answer (or a WAL sync ' +
  'failed); live stays 200', async (t) => {
  const app = await buildTestApp(t)
  t.mock.method(app.store, 'ping', async () => { throw new Error('SQLITE_IOERR: disk I/O error at /secret/path') })
  const ready = await app.inject({ url: '/health/ready' })
  assertError(ready, 503, 'Not ready: the database does not answer')
  assert.equal(ready.headers['retry-after'], '5')
  const live = await app.inject({ url: '/health/live' })
  assert.equal(live.statusCode, 200)
  assert.deepEqual(live.json(), { status: 'ok' })
})

test('while the service sheds load, ready answers 503 (overloaded) and live 200; the API and ' +
  '/health are shed as before', async (t) => {
  // Any heap is over one byte: the service is under pressure from its first sample on.
  const app = await buildTestApp(t, { MAX_HEAP_USED_BYTES: '1' })
  for (let waited = 0; !app.isUnderPressure() && waited < 100; waited++) await sleep(50)
  assert.equal(app.isUnderPressure(), true)
  const ready = await app.inject({ url: '/health/ready' })
  assertError(ready, 503, 'Not ready: the service is overloaded')
  assert.equal(ready.headers['retry-after'], '5')
  assert.equal((await app.inject({ url: '/health/live' })).statusCode, 200)
  assertError(await app.inject({ url: '/plants', headers: AUTH }), 503, 'The service is overloaded, retry later')
  assertError(await app.inject({ url: '/health' }), 503, 'The service is overloaded, retry later')
})
