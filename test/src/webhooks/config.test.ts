import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadConfig } from '../../../src/config/load-config.js'
import { assertConfigRefused } from '../../helpers/config.js'

test('webhook defaults: 10 s timeout, the Standard Webhooks schedule, 10 at once, 5 days to disable, 7 days kept, 10 ' +
  'attempts a second while the API is busy, public URLs only', () => {
  assert.deepEqual(loadConfig({}).webhooks, {
    timeoutMs: 10_000,
    schedule: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
    concurrency: 10,
    perSubscription: 2,
    disableAfterMs: 5 * 86_400_000,
    retentionMs: 7 * 86_400_000,
    pollIntervalMs: 1000,
    busyIntervalMs: 100,
    maxSubscriptions: 25,
    allowPrivate: false
  })
})

test('every WEBHOOK_* variable is read', () => {
  assert.deepEqual(loadConfig({
    WEBHOOK_TIMEOUT_MS: '2500',
    WEBHOOK_RETRY_SCHEDULE: '1000, 60000,3600000',
    WEBHOOK_CONCURRENCY: '32',
    WEBHOOK_SUBSCRIPTION_CONCURRENCY: '4',
    WEBHOOK_DISABLE_AFTER_MS: '86400000',
    WEBHOOK_RETENTION_MS: '3600000',
    WEBHOOK_POLL_INTERVAL_MS: '250',
    WEBHOOK_BUSY_INTERVAL_MS: '20',
    WEBHOOK_MAX_SUBSCRIPTIONS: '3',
    WEBHOOK_ALLOW_PRIVATE_URLS: '1'
  }).webhooks, {
    timeoutMs: 2500,
    schedule: [1000, 60_000, 3_600_000],
    concurrency: 32,
    perSubscription: 4,
    disableAfterMs: 86_400_000,
    retentionMs: 3_600_000,
    pollIntervalMs: 250,
    busyIntervalMs: 20,
    maxSubscriptions: 3,
    allowPrivate: true
  })
  assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE: 'none' }).webhooks.schedule, [])
  assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE: ' ' }).webhooks.schedule, loadConfig({}).webhooks.schedule)
})

test('bad webhook values stop the start with the variable named', () => {
  const bad: Record<string, string> = {
    WEBHOOK_TIMEOUT_MS: '0',
    WEBHOOK_CONCURRENCY: '1.5',
    WEBHOOK_SUBSCRIPTION_CONCURRENCY: '-1',
    WEBHOOK_DISABLE_AFTER_MS: 'five days',
    WEBHOOK_RETENTION_MS: '99999999999999',
    WEBHOOK_POLL_INTERVAL_MS: '5',
    WEBHOOK_BUSY_INTERVAL_MS: '0',
    WEBHOOK_MAX_SUBSCRIPTIONS: '0',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'yes',
    WEBHOOK_RETRY_SCHEDULE: '1000,,2000'
  }
  assertConfigRefused(Object.entries(bad).map(([name, value]) => [{ [name]: value }, new RegExp(name)] as const))
  assert.throws(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: Array(51).fill('1').join(',') }),
    /WEBHOOK_RETRY_SCHEDULE must be "none" or up to 50/)
  assert.throws(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0' }), /WEBHOOK_RETRY_SCHEDULE/)
})
