import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH } from '../../../helpers/app.js'
import { assertError } from '../../../helpers/plants.js'
import { buildWebhooksApp, createWebhook, deliveriesWhen, OTHER_AUTH, viewOf } from '../../../helpers/webhooks.js'

test('DELETE: 204 with an empty body; then the subscription and its deliveries are gone (404), and ' +
  'deleting again is a 404', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'Fern' } })
  await deliveriesWhen(app, 1, (deliveries) => deliveries.length === 1)
  const res = await app.inject({ method: 'DELETE', url: '/webhooks/1', headers: AUTH })
  assert.equal(res.statusCode, 204)
  assert.equal(res.body, '')
  assert.equal(res.headers['content-type'], undefined)
  assertError(await app.inject({ url: '/webhooks/1', headers: AUTH }), 404, 'Webhook subscription 1 not found')
  assertError(await app.inject({ url: '/webhooks/1/deliveries', headers: AUTH }), 404,
    'Webhook subscription 1 not found')
  assertError(await app.inject({ method: 'DELETE', url: '/webhooks/1', headers: AUTH }), 404,
    'Webhook subscription 1 not found')
  assert.deepEqual((await app.inject({ url: '/webhooks', headers: AUTH })).json(), [])
})

test('another token cannot delete a subscription: 404, and it stays', async (t) => {
  const app = await buildWebhooksApp(t)
  const mine = await createWebhook(app)
  assertError(await app.inject({ method: 'DELETE', url: '/webhooks/1', headers: OTHER_AUTH }), 404,
    'Webhook subscription 1 not found')
  assert.deepEqual((await app.inject({ url: '/webhooks/1', headers: AUTH })).json(), viewOf(mine))
})

test('a malformed id is a 400; without a token, 401 and nothing is deleted', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  assertError(await app.inject({ method: 'DELETE', url: '/webhooks/-', headers: AUTH }), 400,
    'params/id must match format "int64"')
  assertError(await app.inject({ method: 'DELETE', url: '/webhooks/1' }), 401, /authorization/i)
  assert.equal((await app.inject({ url: '/webhooks/1', headers: AUTH })).statusCode, 200)
})
