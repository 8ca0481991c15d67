import assert from 'node:assert/strict'
import { test } from 'node:test'
import { webhookOwner } from '../../../src/webhooks/service.js'
import { AUTH, buildTestApp, captureLog, TOKEN } from '../../helpers/app.js'
import { startReceiver } from '../../helpers/webhook-receiver.js'
import { PLANT_CREATED } from '../../helpers/resources.js'

/** Operating webhooks: which request caused a delivery (logs), and how delivery goes (metrics). */

const OWNER = webhookOwner(TOKEN)
const LOOPBACK = { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_POLL_INTERVAL_MS: '50' }

interface LogLine {
  msg?: string,
  reqId?: string,
  webhook?: { status?: string, eventType?: string, subscriptionId?: string }
}

async function waitForLine (text: () => string, match: (line: LogLine) => boolean, timeoutMs = 5000): Promise<LogLine> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const found = text().split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as LogLine).find(
      match)
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`no such log line in:\n${text()}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test('a delivery logs the request id of the write that caused it, as that request\'s own lines do', async (t) => {
  const receiver = await startReceiver(t)
  const log = captureLog()
  const app = await buildTestApp(t, { ...LOOPBACK, LOG_LEVEL: 'info' }, { logStream: log.stream })
  const subscription = await app.webhooks.createSubscription(OWNER, { url: `${receiver.origin}/hooks` })
  const created = await app.inject({
    method: 'POST',
    url: '/plants',
    headers: { ...AUTH, 'x-request-id': 'order-4711' },
    payload: { name: 'Fern' }
  })
  assert.equal(created.statusCode, 201)
  assert.equal(created.headers['x-request-id'], 'order-4711')
  await receiver.waitFor(1)
  const delivered = await waitForLine(log.text, (line) => line.msg === 'webhook delivered')
  assert.equal(delivered.reqId, 'order-4711')
  assert.deepEqual({ ...delivered.webhook, durationMs: undefined, deliveryId: undefined, messageId: undefined }, {
    subscriptionId: String(subscription.id),
    eventType: PLANT_CREATED,
    attempt: 1,
    status: 'succeeded',
    statusCode: 204,
    durationMs: undefined,
    deliveryId: undefined,
    messageId: undefined
  })
  const access = await waitForLine(log.text, (line) => line.reqId === 'order-4711' && line.msg !== 'webhook delivered')
  assert.equal(access.reqId, 'order-4711')
  assert.doesNotMatch(log.text(), new RegExp(subscription.secret.slice(6, 30).replace(/[+/]/g, '.')),
    'the secret never reaches the log')
})

test('while requests saturate the event loop, the app\'s deliveries go one at a time; once requests stop, both of a ' +
  'subscription\'s slots are used again', async (t) => {
  const receiver = await startReceiver(t)
  const held: Array<() => void> = []
  receiver.respond((_request, res) => { held.push(() => { res.writeHead(204).end() }) })
  // A loop reported as fully used: whether the API is busy then depends on requests being served.
  const app = await buildTestApp(t, LOOPBACK, { webhookLoad: { utilization: () => 1, intervalMs: 10 } })
  await app.webhooks.createSubscription(OWNER, { url: `${receiver.origin}/hooks` })
  let traffic = true
  const requests = (async () => {
    // `traffic` is turned off by the test body, across the awaits.
    // eslint-disable-next-line no-unmodified-loop-condition
    while (traffic) {
      await app.inject({ method: 'GET', url: '/health/live' })
      // inject() can finish without leaving the microtask queue: let timers (the sampler) run.
      await new Promise((resolve) => setImmediate(resolve))
    }
  })()
  t.after(async () => {
    traffic = false
    await requests
    for (const answer of held.splice(0)) answer()
  })
  await new Promise((resolve) => setTimeout(resolve, 50))
  for (let i = 0; i < 4; i++) {
    assert.equal(
      (await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: `plant ${i}` } })).statusCode,
      201)
  }
  await receiver.waitFor(1)
  await new Promise((resolve) => setTimeout(resolve, 150))
  assert.equal(receiver.requests.length, 1,
    'one attempt at a time while the API is busy (WEBHOOK_SUBSCRIPTION_CONCURRENCY is 2)')

  traffic = false
  await requests
  // A few sampling intervals without requests: no longer busy.
  await new Promise((resolve) => setTimeout(resolve, 50))
  held.shift()?.()
  await receiver.waitFor(3)
  assert.equal(held.length, 2, 'two attempts in flight at once')
})

/** The sample's value in a Prometheus text exposition (labels exactly as given), or undefined. */
function sample (text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}${labels} `))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}

async function scrape (app: Awaited<ReturnType<typeof buildTestApp>>): Promise<string> {
  const metrics = app.metrics
  assert.ok(metrics !== undefined)
  const response = await fetch(`http://127.0.0.1:${metrics.address().port}/metrics`)
  assert.equal(response.status, 200)
  return await response.text()
}

test('metrics: attempts by outcome, the backlog and the age of its oldest delivery, in-flight attempts', async (t) => {
  const receiver = await startReceiver(t)
  const app = await buildTestApp(t, { ...LOOPBACK, METRICS_PORT: '0', WEBHOOK_RETRY_SCHEDULE: '3600000' })
  let before = await scrape(app)
  for (const outcome of ['succeeded', 'retrying', 'failed']) {
    assert.equal(sample(before, 'plantstore_webhook_delivery_attempts_total', `{outcome="${outcome}"}`), 0)
  }
  assert.equal(sample(before, 'plantstore_webhook_backlog_deliveries'), 0)
  assert.equal(sample(before, 'plantstore_webhook_backlog_oldest_age_seconds'), 0)
  assert.equal(sample(before, 'plantstore_webhook_inflight_attempts'), 0)

  await app.webhooks.createSubscription(OWNER, { url: `${receiver.origin}/hooks` })
  assert.equal((await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'a' } })).statusCode,
    201)
  await receiver.waitFor(1)
  // The receiver now refuses: the next event waits for its retry, an hour away.
  receiver.respond((_request, res) => { res.writeHead(500).end() })
  assert.equal((await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'b' } })).statusCode,
    201)
  await receiver.waitFor(2)
  for (let turn = 0; turn < 100; turn++) {
    before = await scrape(app)
    if (sample(before, 'plantstore_webhook_delivery_attempts_total', '{outcome="retrying"}') === 1) break
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.equal(sample(before, 'plantstore_webhook_delivery_attempts_total', '{outcome="succeeded"}'), 1)
  assert.equal(sample(before, 'plantstore_webhook_delivery_attempts_total', '{outcome="retrying"}'), 1)
  assert.equal(sample(before, 'plantstore_webhook_delivery_attempts_total', '{outcome="failed"}'), 0)
  assert.equal(sample(before, 'plantstore_webhook_backlog_deliveries'), 1)
  assert.ok((sample(before, 'plantstore_webhook_backlog_oldest_age_seconds') ?? 0) > 0)
})

test('metrics: a receiver answering 410 Gone counts a failed delivery and a ' +
  'subscription disabled as gone', async (t) => {
  const receiver = await startReceiver(t)
  receiver.respond((_request, res) => { res.writeHead(410).end() })
  const app = await buildTestApp(t, { ...LOOPBACK, METRICS_PORT: '0' })
  assert.equal(sample(await scrape(app), 'plantstore_webhook_subscriptions_disabled_total', '{reason="gone"}'), 0)
  const subscription = await app.webhooks.createSubscription(OWNER, { url: `${receiver.origin}/hooks` })
  assert.equal((await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'a' } })).statusCode,
    201)
  await receiver.waitFor(1)
  let text = ''
  for (let turn = 0; turn < 100; turn++) {
    text = await scrape(app)
    if (sample(text, 'plantstore_webhook_subscriptions_disabled_total', '{reason="gone"}') === 1) break
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.equal(sample(text, 'plantstore_webhook_subscriptions_disabled_total', '{reason="gone"}'), 1)
  assert.equal(sample(text, 'plantstore_webhook_subscriptions_disabled_total', '{reason="failing"}'), 0)
  assert.equal(sample(text, 'plantstore_webhook_delivery_attempts_total', '{outcome="failed"}'), 1)
  assert.equal(sample(text, 'plantstore_webhook_backlog_deliveries'), 0,
    'a disabled subscription\'s deliveries wait for nothing')
  assert.equal((await app.webhooks.getSubscription(OWNER, subscription.id)).disabled, true)
})
