import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { AUTH, buildTestApp, captureLog } from '../helpers/app.js'

test('under memory pressure every request, /health included, gets 503 in the Error ' +
  'shape with Retry-After', async (t) => {
  // Any process uses more than 1 byte of RSS: the service is under pressure from the first sample on.
  const app = await buildTestApp(t, { MAX_RSS_BYTES: '1' })
  // Waits for the first sample (taken once a second); the test's own timeout bounds the wait.
  while (!app.isUnderPressure()) await sleep(50)

  for (const request of [{ method: 'GET', url: '/health' },
    { method: 'DELETE', url: '/plants/1', headers: AUTH }] as const) {
    const res = await app.inject(request)
    assert.equal(res.statusCode, 503, request.url)
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    assert.equal(res.headers['retry-after'], '10')
    assert.deepEqual(res.json(), { error: 503, message: 'The service is overloaded, retry later' })
  }
})

test('with thresholds not reached, requests go through', async (t) => {
  const app = await buildTestApp(t, { MAX_RSS_BYTES: String(64 * 1024 ** 3) })
  assert.equal(app.isUnderPressure(), false)
  assert.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200)
})

test('shed requests are not logged as errors: they come in floods, exactly when the service is busiest', async (t) => {
  const log = captureLog()
  const app = await buildTestApp(t, { DATABASE_URL: ':memory:', LOG_LEVEL: 'info', MAX_RSS_BYTES: '1' },
    { logStream: log.stream })
  while (!app.isUnderPressure()) await sleep(50)
  assert.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 503)
  assert.match(log.text(), /"statusCode":503/)
  assert.doesNotMatch(log.text(), /"level":50/)
})
