import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH } from '../../../helpers/app.js'
import { assertError, JSON_TYPE } from '../../../helpers/plants.js'
import { buildWebhooksApp, createWebhook, OTHER_AUTH } from '../../../helpers/webhooks.js'
import { PLANT_UPDATED } from '../../../helpers/resources.js'

test('GET /webhooks/{id}: the subscription as created without its secret, which GET …/secret answers; ' +
  'HEAD: the same without a body', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = await createWebhook(app,
    { url: 'https://93.184.216.34/x', events: [PLANT_UPDATED], description: 'd' })
  const res = await app.inject({ url: '/webhooks/1', headers: AUTH })
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  const { secret, ...view } = created
  assert.deepEqual(res.json(), view)
  const shown = await app.inject({ url: '/webhooks/1/secret', headers: AUTH })
  assert.equal(shown.statusCode, 200)
  assert.equal(shown.headers['content-type'], JSON_TYPE)
  assert.deepEqual(shown.json(), { secret })
  const head = await app.inject({ method: 'HEAD', url: '/webhooks/1', headers: AUTH })
  assert.equal(head.statusCode, 200)
  assert.equal(head.body, '')
})

test('a missing id and another token\'s subscription are the same 404', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  await createWebhook(app, undefined, OTHER_AUTH)
  assertError(await app.inject({ url: '/webhooks/2', headers: AUTH }), 404, 'Webhook subscription 2 not found')
  assertError(await app.inject({ url: '/webhooks/3', headers: AUTH }), 404, 'Webhook subscription 3 not found')
  assertError(await app.inject({ url: '/webhooks/1', headers: OTHER_AUTH }), 404, 'Webhook subscription 1 not found')
  assert.equal((await app.inject({ url: '/webhooks/2', headers: OTHER_AUTH })).statusCode, 200)
})

test('an id that is not an int64 is a 400; without a token, 401', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  for (const id of ['x', '1.5', '01', '9223372036854775808']) {
    assertError(await app.inject({ url: `/webhooks/${id}`, headers: AUTH }), 400, 'params/id must match format "int64"')
  }
  assertError(await app.inject({ url: '/webhooks/1' }), 401, /authorization/i)
})
