import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH } from '../../../helpers/app.js'
import { assertError, createPlant, JSON_TYPE } from '../../../helpers/plants.js'
import { startReceiver } from '../../../helpers/webhook-receiver.js'
import { buildWebhooksApp, createWebhook, deliveriesWhen, OTHER_AUTH } from '../../../helpers/webhooks.js'
import { PLANT_DELETED } from '../../../helpers/resources.js'

const recover = (app: FastifyInstance, id: number | string, payload: unknown, headers: Record<string, string> = AUTH) =>
  app.inject({ method: 'POST', url: `/webhooks/${id}/recover`, headers, payload: payload as Record<string, unknown> })

test('recover: 202 with how many failed deliveries since then are due again; they are delivered ' +
  '(receiver on 127.0.0.1)', async (t) => {
  const receiver = await startReceiver(t)
  receiver.respond((_request, res) => { res.writeHead(503).end() })
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_RETRY_SCHEDULE: 'none' })
  const subscription = await createWebhook(app, { url: `${receiver.origin}/hooks` })
  const other = await createWebhook(app, { url: `${receiver.origin}/other`, events: [PLANT_DELETED] })
  await createPlant(app, { name: 'old' })
  await deliveriesWhen(app, subscription.id, ([first]) => first?.status === 'failed')
  await new Promise((resolve) => setTimeout(resolve, 5))
  const since = new Date().toISOString()
  await new Promise((resolve) => setTimeout(resolve, 5))
  for (const name of ['a', 'b']) await createPlant(app, { name })
  await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  await deliveriesWhen(app, subscription.id,
    (all) => all.length === 4 && all.every((delivery) => delivery.status === 'failed'))
  await deliveriesWhen(app, other.id, (all) => all.length === 1 && all[0]?.status === 'failed')
  receiver.respond((_request, res) => { res.writeHead(204).end() })
  const before = receiver.requests.length
  const res = await recover(app, subscription.id, { since })
  assert.equal(res.statusCode, 202, res.body)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  assert.deepEqual(res.json(), { recovered: 3 })
  const after = await deliveriesWhen(app, subscription.id,
    (all) => all.filter((delivery) => delivery.status === 'succeeded').length === 3)
  assert.deepEqual(after.map((delivery) => delivery.status), ['succeeded', 'succeeded', 'succeeded', 'failed'],
    'the one before `since` stays failed')
  assert.deepEqual(receiver.requests.slice(before).map((request) => request.url), ['/hooks', '/hooks', '/hooks'],
    'another subscription\'s are left alone')
  assert.deepEqual((await recover(app, subscription.id, { since })).json(), { recovered: 0 })
})

test('recover: another token\'s or a missing subscription is a 404; a bad since or body ' +
  'a 400; no token a 401', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  const since = '2026-01-01T00:00:00Z'
  assertError(await recover(app, 1, { since }, OTHER_AUTH), 404, 'Webhook subscription 1 not found')
  assertError(await recover(app, 2, { since }), 404, 'Webhook subscription 2 not found')
  assertError(await recover(app, 1, { since: 'yesterday' }), 400, 'body/since must match format "date-time"')
  assertError(await recover(app, 1, {}), 400, "body must have property 'since'")
  assertError(await recover(app, 'x', { since }), 400, 'params/id must match format "int64"')
  assertError(await recover(app, 1, { since }, {}), 401, /authorization/i)
})

test('recover: a leap second (RFC 3339 :60) is the second after :59, on every store: never a 500', async (t) => {
  const receiver = await startReceiver(t)
  receiver.respond((_request, res) => { res.writeHead(503).end() })
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_RETRY_SCHEDULE: 'none' })
  const subscription = await createWebhook(app, { url: `${receiver.origin}/hooks` })
  await createPlant(app, { name: 'Fern' })
  await deliveriesWhen(app, subscription.id, ([first]) => first?.status === 'failed')
  for (const since of ['9998-12-31T23:59:60Z', '9999-01-01T00:59:60.999+01:00']) {
    const res = await recover(app, subscription.id, { since })
    assert.equal(res.statusCode, 202, res.body)
    assert.deepEqual(res.json(), { recovered: 0 }, since)
  }
  const res = await recover(app, subscription.id, { since: '2016-12-31T23:59:60Z' })
  assert.equal(res.statusCode, 202, res.body)
  assert.deepEqual(res.json(), { recovered: 1 })
})
