import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH } from '../../../helpers/app.js'
import { assertError, createPlant, JSON_TYPE } from '../../../helpers/plants.js'
import { startReceiver } from '../../../helpers/webhook-receiver.js'
import {
  buildWebhooksApp, createWebhook, deliveriesWhen, OTHER_AUTH, PUBLIC_RECEIVER,
  type DeliveryBody
} from '../../../helpers/webhooks.js'
import { PLANT_CREATED, PLANT_DELETED, PLANT_UPDATED } from '../../../helpers/resources.js'

const deliveries = (app: FastifyInstance, query: string, headers: Record<string, string> = AUTH, id = 1) =>
  app.inject({ url: `/webhooks/${id}/deliveries${query}`, headers })

test('a plant write makes a delivery; an attempt that cannot connect leaves it pending with the error and ' +
  'the next attempt\'s time', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  assert.deepEqual((await deliveries(app, '')).json(), [])
  const { plant } = await createPlant(app, { name: 'Fern' })
  // The test network rule fails the attempt before any socket is opened (loopback-only.ts).
  const [delivery] = await deliveriesWhen(app, 1, ([first]) => (first?.attempts ?? 0) >= 1)
  assert.ok(delivery !== undefined)
  assert.deepEqual(Object.keys(delivery).sort(),
    ['attempts', 'createdAt', 'eventType', 'id', 'lastAttemptAt', 'lastError', 'nextAttemptAt', 'status'])
  assert.deepEqual([delivery.id, delivery.eventType, delivery.status, delivery.attempts],
    [1, PLANT_CREATED, 'pending', 1])
  assert.match(String(delivery.lastError), /^connection: .*test network rule: no connection to 93\.184\.216\.34/)
  assert.equal(delivery.createdAt, plant.createdAt)
  assert.ok(String(delivery.nextAttemptAt) > String(delivery.lastAttemptAt))
  assert.ok(String(delivery.lastAttemptAt) >= delivery.createdAt)
  const res = await deliveries(app, '')
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  assert.equal(res.headers.link, undefined)
})

test('a receiver that answers 2xx: succeeded, with its status code (receiver on 127.0.0.1)', async (t) => {
  const receiver = await startReceiver(t)
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1' })
  await createWebhook(app, { url: `${receiver.origin}/hooks` })
  await createPlant(app, { name: 'Fern' })
  const [delivery] = await deliveriesWhen(app, 1, ([first]) => first?.status === 'succeeded')
  assert.ok(delivery !== undefined)
  assert.deepEqual({ ...delivery, lastAttemptAt: '', createdAt: '' },
    {
      id: 1,
      eventType: PLANT_CREATED,
      status: 'succeeded',
      attempts: 1,
      lastAttemptAt: '',
      lastStatusCode: 204,
      createdAt: ''
    })
  assert.equal(receiver.requests.length, 1)
})

test('newest first, only the event types subscribed, paged with limit, before and Link', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app, { url: PUBLIC_RECEIVER, events: [PLANT_CREATED, PLANT_DELETED] })
  await createWebhook(app, { url: PUBLIC_RECEIVER, events: [PLANT_UPDATED], disabled: true })
  for (const name of ['a', 'b', 'c']) await createPlant(app, { name })
  await app.inject({ method: 'PATCH', url: '/plants/1', headers: AUTH, payload: { tag: 'x' } })
  await app.inject({ method: 'DELETE', url: '/plants/2', headers: AUTH })
  const summary = (list: DeliveryBody[]) => list.map(({ id, eventType }) => [id, eventType])
  const all = await deliveries(app, '')
  assert.deepEqual(summary(all.json()),
    [[4, PLANT_DELETED], [3, PLANT_CREATED], [2, PLANT_CREATED], [1, PLANT_CREATED]])
  const first = await deliveries(app, '?limit=2')
  assert.deepEqual(summary(first.json()), [[4, PLANT_DELETED], [3, PLANT_CREATED]])
  assert.equal(first.headers.link, '</webhooks/1/deliveries?limit=2&before=3>; rel="next"')
  const second = await deliveries(app, '?limit=2&before=3')
  assert.deepEqual(summary(second.json()), [[2, PLANT_CREATED], [1, PLANT_CREATED]])
  assert.equal(second.headers.link, undefined)
  // A disabled subscription gets no deliveries.
  assert.deepEqual((await deliveries(app, '', AUTH, 2)).json(), [])
})

test('another token\'s subscription or a missing one: 404', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  await createPlant(app, { name: 'Fern' })
  assertError(await deliveries(app, '', OTHER_AUTH), 404, 'Webhook subscription 1 not found')
  assertError(await deliveries(app, '', AUTH, 2), 404, 'Webhook subscription 2 not found')
})

test('invalid or unknown query parameters and malformed ids are 400s; without a token, 401', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  assertError(await deliveries(app, '?limit=0'), 400, 'querystring/limit must be >= 1')
  assertError(await deliveries(app, '?limit=101'), 400, 'querystring/limit must be <= 100')
  assertError(await deliveries(app, '?limit=1e1'), 400, 'querystring/limit must be a canonical decimal integer')
  assertError(await deliveries(app, '?before=x'), 400, 'querystring/before must match format "int64"')
  assertError(await deliveries(app, '?after=1'), 400, "querystring has unknown property 'after'")
  assertError(await deliveries(app, '?before=%FF'), 400, 'querystring/before is not percent-encoded UTF-8')
  assertError(await app.inject({ url: '/webhooks/x/deliveries', headers: AUTH }), 400,
    'params/id must match format "int64"')
  assertError(await deliveries(app, '', {}), 401, /authorization/i)
})
