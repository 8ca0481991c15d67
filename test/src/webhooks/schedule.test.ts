import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DEFAULT_RETRY_SCHEDULE_MS, retryDelay, verdict } from '../../../src/webhooks/schedule.js'

test('the default schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
  assert.deepEqual(DEFAULT_RETRY_SCHEDULE_MS,
    [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000])
})

test('retryDelay: the n-th wait after n failed attempts, scaled by the jitter; none once the schedule is spent', () => {
  const schedule = [1000, 60_000]
  assert.equal(retryDelay(schedule, 1, 0), 1000)
  assert.equal(retryDelay(schedule, 2, 0), 60_000)
  assert.equal(retryDelay(schedule, 3, 0), undefined)
  assert.equal(retryDelay(schedule, 1, 0.2, () => 0), 800)
  assert.equal(retryDelay(schedule, 1, 0.2, () => 0.5), 1000)
  assert.equal(retryDelay(schedule, 1, 0.2, () => 0.999999), 1200)
  for (let i = 0; i < 1000; i++) {
    const delay = retryDelay(DEFAULT_RETRY_SCHEDULE_MS, 1) as number
    assert.ok(delay >= 4000 && delay <= 6000, String(delay))
  }
  assert.equal(retryDelay([], 1, 0), undefined, 'an empty schedule never retries')
})

test('verdict: 2xx succeeds, 410 is gone, anything else retries on the schedule and then fails', () => {
  const schedule = [1000]
  const at = 1_000_000
  for (const statusCode of [200, 201, 204, 299]) {
    assert.deepEqual(verdict({ statusCode, attempts: 1, attemptedAt: at }, schedule, 0), { status: 'succeeded' })
  }
  assert.deepEqual(verdict({ statusCode: 410, attempts: 1, attemptedAt: at }, schedule, 0), { status: 'gone' })
  for (const statusCode of [100, 199, 301, 302, 304, 400, 404, 429, 500, 503, undefined]) {
    assert.deepEqual(verdict({ ...(statusCode !== undefined && { statusCode }), attempts: 1, attemptedAt: at },
      schedule, 0),
    { status: 'retry', nextAttemptAt: at + 1000 }, String(statusCode))
    assert.deepEqual(
      verdict({ ...(statusCode !== undefined && { statusCode }), attempts: 2, attemptedAt: at }, schedule, 0),
      { status: 'failed' })
  }
})
