import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH } from '../../../helpers/app.js'
import { assertError, JSON_TYPE } from '../../../helpers/plants.js'
import { startReceiver, until, verifyWebhook } from '../../../helpers/webhook-receiver.js'
import { buildWebhooksApp, createWebhook, OTHER_AUTH } from '../../../helpers/webhooks.js'

test('test: a signed webhook.test event is sent now, and the answer is the attempt\'s outcome ' +
  '(receiver on 127.0.0.1)', async (t) => {
  const receiver = await startReceiver(t)
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1' })
  // Disabled: a test is sent all the same.
  const subscription = await createWebhook(app, { url: `${receiver.origin}/hooks`, disabled: true })
  receiver.respond((_request, res) => { res.writeHead(200, { 'content-type': 'text/plain' }).end('got it') })
  const res = await app.inject({ method: 'POST', url: `/webhooks/${subscription.id}/test`, headers: AUTH })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  const outcome = res.json<{ webhookId: string, at: string, durationMs: number }>()
  const [request] = receiver.requests
  assert.ok(request !== undefined)
  const event = verifyWebhook(subscription.secret, request) as { type: string, timestamp: string, data: unknown }
  assert.deepEqual(event, { type: 'webhook.test', timestamp: outcome.at, data: { subscriptionId: subscription.id } })
  assert.equal(request.headers['webhook-id'], outcome.webhookId)
  assert.deepEqual({ ...outcome, durationMs: 0 }, {
    webhookId: outcome.webhookId,
    succeeded: true,
    at: outcome.at,
    durationMs: 0,
    statusCode: 200,
    responseBody: 'got it'
  })
  receiver.respond((_request, res) => { res.writeHead(500).end() })
  const failed = (await app.inject(
    { method: 'POST', url: `/webhooks/${subscription.id}/test`, headers: AUTH })).json<Record<string, unknown>>()
  assert.deepEqual([failed.succeeded, failed.statusCode, failed.error], [false, 500, 'the receiver answered 500'])
  assert.notEqual(failed.webhookId, outcome.webhookId)
  // Nothing is stored: no delivery.
  assert.deepEqual((await app.inject({ url: `/webhooks/${subscription.id}/deliveries`, headers: AUTH })).json(), [])
})

test('test: no answer is an outcome too; another token\'s subscription a 404; no token a 401', async (t) => {
  const receiver = await startReceiver(t)
  const origin = receiver.origin
  await receiver.close()
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1' })
  await createWebhook(app, { url: `${origin}/hooks` })
  const res = await app.inject({ method: 'POST', url: '/webhooks/1/test', headers: AUTH })
  assert.equal(res.statusCode, 200)
  const outcome = res.json<Record<string, unknown>>()
  assert.equal(outcome.succeeded, false)
  assert.equal('statusCode' in outcome, false)
  assert.match(String(outcome.error), /^connection: .*ECONNREFUSED/)
  assertError(await app.inject({ method: 'POST', url: '/webhooks/1/test', headers: OTHER_AUTH }), 404,
    'Webhook subscription 1 not found')
  assertError(await app.inject({ method: 'POST', url: '/webhooks/x/test', headers: AUTH }), 400,
    'params/id must match format "int64"')
  assertError(await app.inject({ method: 'POST', url: '/webhooks/1/test' }), 401, /authorization/i)
})

test('test: signed like a delivery, with every secret still honoured: after two rotations a receiver on ' +
  'the first verifies it', async (t) => {
  const receiver = await startReceiver(t)
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1' })
  const subscription = await createWebhook(app, { url: `${receiver.origin}/hooks` })
  const rotations: string[] = []
  for (let i = 0; i < 2; i++) {
    const res = await app.inject({ method: 'POST', url: `/webhooks/${subscription.id}/rotate-secret`, headers: AUTH })
    rotations.push(res.json<{ secret: string }>().secret)
  }
  assert.equal(
    (await app.inject({ method: 'POST', url: `/webhooks/${subscription.id}/test`, headers: AUTH })).statusCode, 200)
  const [request] = receiver.requests
  assert.ok(request !== undefined)
  for (const secret of [subscription.secret, ...rotations]) {
    assert.deepEqual((verifyWebhook(secret, request) as { type: string }).type, 'webhook.test')
  }
  assert.equal(String(request.headers['webhook-signature']).split(' ').length, 3)
})

test('test: sends take the delivery slots (WEBHOOK_SUBSCRIPTION_CONCURRENCY): with none free within a second, 503 + ' +
  'Retry-After, no connection', async (t) => {
  const receiver = await startReceiver(t)
  const app = await buildWebhooksApp(t, {
    WEBHOOK_ALLOW_PRIVATE_URLS: '1',
    WEBHOOK_CONCURRENCY: '10',
    WEBHOOK_SUBSCRIPTION_CONCURRENCY: '2'
  },
  { webhookLoad: { utilization: () => 0 } })
  const subscription = await createWebhook(app, { url: `${receiver.origin}/hooks` })
  let answer = (): void => {}
  const held = new Promise<void>((resolve) => { answer = resolve })
  receiver.respond(async (_request, res) => { await held; res.writeHead(204).end() })
  let settled = 0
  const calls = Array.from({ length: 30 }, async () => {
    const res = await app.inject({ method: 'POST', url: `/webhooks/${subscription.id}/test`, headers: AUTH })
    settled++
    return res
  })
  await until('every call but the two in flight was answered', () => settled === 28 && receiver.requests.length === 2)
  answer()
  const answers = await Promise.all(calls)
  assert.deepEqual(answers.map((res) => res.statusCode).sort(), [...Array(2).fill(200), ...Array(28).fill(503)])
  const refused = answers.find((res) => res.statusCode === 503)
  assert.equal(refused?.headers['retry-after'], '1')
  assert.deepEqual(refused?.json(), {
    error: 503,
    message: 'No webhook delivery slot is free for a test event (test events are paced as deliveries): retry in 1 s'
  })
  assert.equal(receiver.requests.length, 2)
  // The slots are free again once the attempts are over.
  assert.equal(
    (await app.inject({ method: 'POST', url: `/webhooks/${subscription.id}/test`, headers: AUTH })).statusCode, 200)
})
