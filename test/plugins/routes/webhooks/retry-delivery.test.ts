import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH } from '../../../helpers/app.js'
import { assertError, createPlant, JSON_TYPE } from '../../../helpers/plants.js'
import { startReceiver } from '../../../helpers/webhook-receiver.js'
import {
  buildWebhooksApp, createWebhook, deliveriesWhen, OTHER_AUTH,
  type DeliveryBody
} from '../../../helpers/webhooks.js'
import { PLANT_CREATED, PLANT_DELETED } from '../../../helpers/resources.js'

const retry = (app: FastifyInstance, id: number | string, deliveryId: number | string,
  headers: Record<string, string> = AUTH) =>
  app.inject({ method: 'POST', url: `/webhooks/${id}/deliveries/${deliveryId}/retry`, headers })

test('retry: 202 with the delivery due now, and it is attempted again at once, not on the schedule', async (t) => {
  // The next scheduled attempt is an hour away: a second attempt within the test can only be the retry.
  const app = await buildWebhooksApp(t, { WEBHOOK_RETRY_SCHEDULE: '3600000' })
  await createWebhook(app)
  await createPlant(app, { name: 'Fern' })
  const [failed] = await deliveriesWhen(app, 1, ([first]) => (first?.attempts ?? 0) >= 1)
  assert.ok(failed !== undefined)
  const before = new Date().toISOString()
  const res = await retry(app, 1, failed.id)
  assert.equal(res.statusCode, 202, res.body)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  const due = res.json<DeliveryBody>()
  assert.deepEqual({ ...due, nextAttemptAt: '' }, { ...failed, nextAttemptAt: '' })
  assert.ok(String(due.nextAttemptAt) >= before && String(due.nextAttemptAt) < String(failed.nextAttemptAt))
  const [again] = await deliveriesWhen(app, 1, ([first]) => (first?.attempts ?? 0) >= 2)
  // Failed for good: the schedule has one retry, and two attempts are made.
  assert.deepEqual([again?.status, again?.attempts, again?.nextAttemptAt], ['failed', 2, undefined])
})

test('a failed delivery gets one more attempt, to the same receiver with the same webhook-id (receiver on ' +
  '127.0.0.1)', async (t) => {
  const receiver = await startReceiver(t)
  receiver.respond((_request, res) => { res.writeHead(500).end() })
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_RETRY_SCHEDULE: 'none' })
  await createWebhook(app, { url: `${receiver.origin}/hooks` })
  await createPlant(app, { name: 'Fern' })
  const [failed] = await deliveriesWhen(app, 1, ([first]) => first?.status === 'failed')
  assert.deepEqual([failed?.attempts, failed?.lastStatusCode, failed?.lastError], [1, 500, 'the receiver answered 500'])
  receiver.respond((_request, res) => { res.writeHead(200).end() })
  const res = await retry(app, 1, 1)
  assert.equal(res.statusCode, 202)
  assert.equal(res.json<DeliveryBody>().status, 'pending')
  const [succeeded] = await deliveriesWhen(app, 1, ([first]) => first?.status === 'succeeded')
  assert.deepEqual([succeeded?.attempts, succeeded?.lastStatusCode, succeeded?.lastError], [2, 200, undefined])
  const [first, second] = await receiver.waitFor(2)
  assert.equal(second?.headers['webhook-id'], first?.headers['webhook-id'])
  assert.equal(second?.body, first?.body)
})

test('a delivery of a disabled subscription is a 409 until the subscription is enabled again', async (t) => {
  const app = await buildWebhooksApp(t, { WEBHOOK_RETRY_SCHEDULE: '3600000' })
  await createWebhook(app)
  await createPlant(app, { name: 'Fern' })
  await deliveriesWhen(app, 1, ([first]) => (first?.attempts ?? 0) >= 1)
  await app.inject({ method: 'PATCH', url: '/webhooks/1', headers: AUTH, payload: { disabled: true } })
  assertError(await retry(app, 1, 1), 409, 'Webhook subscription 1 is disabled: enable it to retry its deliveries')
  await app.inject({ method: 'PATCH', url: '/webhooks/1', headers: AUTH, payload: { disabled: false } })
  assert.equal((await retry(app, 1, 1)).statusCode, 202)
})

test('an unknown delivery, another subscription\'s delivery and another token\'s subscription are 404s', async (t) => {
  const app = await buildWebhooksApp(t, { WEBHOOK_RETRY_SCHEDULE: '3600000' })
  await createWebhook(app, { url: 'https://93.184.216.34/one', events: [PLANT_CREATED] })
  await createWebhook(app, { url: 'https://93.184.216.34/two', events: [PLANT_DELETED] })
  await createPlant(app, { name: 'Fern' })
  await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  const [ofSecond] = await deliveriesWhen(app, 2, (list) => list.length === 1)
  assert.equal(ofSecond?.id, 2)
  assertError(await retry(app, 1, 99), 404, 'Delivery 99 of webhook subscription 1 not found')
  assertError(await retry(app, 1, 2), 404, 'Delivery 2 of webhook subscription 1 not found')
  assertError(await retry(app, 1, 1, OTHER_AUTH), 404, 'Delivery 1 of webhook subscription 1 not found')
  assertError(await retry(app, 3, 1), 404, 'Delivery 1 of webhook subscription 3 not found')
})

test('malformed ids or a body are 400s; without a token, 401', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  assertError(await retry(app, 'x', 1), 400, 'params/id must match format "int64"')
  assertError(await retry(app, 1, 'x'), 400, 'params/deliveryId must match format "int64"')
  const withBody = await app.inject({
    method: 'POST',
    url: '/webhooks/1/deliveries/1/retry',
    headers: AUTH,
    payload: {}
  })
  assertError(withBody, 400, 'POST /webhooks/{id}/deliveries/{deliveryId}/retry takes no request body')
  assertError(await retry(app, 1, 1, {}), 401, /authorization/i)
})
