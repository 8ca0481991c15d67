import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH } from '../../../helpers/app.js'
import { assertError, JSON_TYPE } from '../../../helpers/plants.js'
import { startReceiver, verifyWebhook } from '../../../helpers/webhook-receiver.js'
import { buildWebhooksApp, createWebhook, OTHER_AUTH, SECRET, type WebhookBody } from '../../../helpers/webhooks.js'

const rotate = (app: FastifyInstance, id: number | string, headers: Record<string, string> = AUTH) =>
  app.inject({ method: 'POST', url: `/webhooks/${id}/rotate-secret`, headers })

test('rotate-secret: 200 with the subscription carrying a new whsec_ secret, which GET shows from then on', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = await createWebhook(app)
  const res = await rotate(app, 1)
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  const rotated = res.json<WebhookBody>()
  assert.match(rotated.secret, SECRET)
  assert.notEqual(rotated.secret, created.secret)
  assert.deepEqual({ ...rotated, secret: '', updatedAt: '' }, { ...created, secret: '', updatedAt: '' })
  assert.ok(rotated.updatedAt > created.updatedAt)
  assert.deepEqual((await app.inject({ url: '/webhooks/1', headers: AUTH })).json(), rotated)
  const again = (await rotate(app, 1)).json<WebhookBody>()
  assert.notEqual(again.secret, rotated.secret)
})

test('after a rotation, deliveries are signed with the new and the previous secret (receiver on 127.0.0.1)', async (t) => {
  const receiver = await startReceiver(t)
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1' })
  const created = await createWebhook(app, { url: `${receiver.origin}/hooks`, events: ['plant.created'] })
  const rotated = (await rotate(app, created.id)).json<WebhookBody>()
  await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'Fern' } })
  const [request] = await receiver.waitFor(1)
  assert.ok(request !== undefined)
  assert.equal(String(request.headers['webhook-signature']).split(' ').length, 2)
  // Either secret alone verifies the delivery (Standard Webhooks accepts any one matching signature).
  for (const secret of [rotated.secret, created.secret]) {
    assert.equal((verifyWebhook(secret, request) as { type: string }).type, 'plant.created')
  }
})

test('another token\'s subscription or a missing one: 404, and the secret stays', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = await createWebhook(app)
  assertError(await rotate(app, 1, OTHER_AUTH), 404, 'Webhook subscription 1 not found')
  assertError(await rotate(app, 2), 404, 'Webhook subscription 2 not found')
  assert.equal((await app.inject({ url: '/webhooks/1', headers: AUTH })).json<WebhookBody>().secret, created.secret)
})

test('a malformed id or a body is a 400; without a token, 401', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = await createWebhook(app)
  assertError(await rotate(app, 'x'), 400, 'params/id must match format "int64"')
  const withBody = await app.inject({ method: 'POST', url: '/webhooks/1/rotate-secret', headers: AUTH, payload: { secret: 'whsec_mine' } })
  assertError(withBody, 400, 'POST /webhooks/{id}/rotate-secret takes no request body')
  assertError(await rotate(app, 1, {}), 401, /authorization/i)
  assert.equal((await app.inject({ url: '/webhooks/1', headers: AUTH })).json<WebhookBody>().secret, created.secret)
})
