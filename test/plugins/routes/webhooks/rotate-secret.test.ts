import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH } from '../../../helpers/app.js'
import { assertError, JSON_TYPE } from '../../../helpers/plants.js'
import { startReceiver, verifyWebhook } from '../../../helpers/webhook-receiver.js'
import { buildWebhooksApp, createWebhook, OTHER_AUTH, SECRET, type WebhookBody } from '../../../helpers/webhooks.js'
import { PLANT_CREATED } from '../../../helpers/resources.js'

const rotate = (app: FastifyInstance, id: number | string, headers: Record<string, string> = AUTH, payload?: unknown) =>
  app.inject({
    method: 'POST',
    url: `/webhooks/${id}/rotate-secret`,
    headers,
    ...(payload !== undefined && { payload: payload as Record<string, unknown> })
  })
const secretOf = async (app: FastifyInstance, id: number): Promise<string> =>
  (await app.inject({ url: `/webhooks/${id}/secret`, headers: AUTH })).json<{ secret: string }>().secret
/** 24 and 64 bytes: the bounds Standard Webhooks sets (distinct bytes: one byte repeated is refused). */
const bytes = (count: number): Buffer => Buffer.from(Array.from({ length: count }, (_, i) => (i * 37 + 11) % 256))
const MINE = `whsec_${bytes(24).toString('base64')}`
const LONGEST = `whsec_${bytes(64).toString('base64')}`

test('rotate-secret: 200 with the subscription carrying a new whsec_ secret, which GET ' +
  '…/secret shows from then on', async (t) => {
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
  assert.equal(await secretOf(app, 1), rotated.secret)
  const { secret: _secret, ...view } = rotated
  assert.deepEqual((await app.inject({ url: '/webhooks/1', headers: AUTH })).json(), view)
  const again = (await rotate(app, 1, AUTH, {})).json<WebhookBody>()
  assert.notEqual(again.secret, rotated.secret)
})

test('rotate-secret takes the integrator\'s secret: whsec_ and 24 to 64 bytes in base64', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  for (const secret of [MINE, LONGEST]) {
    const res = await rotate(app, 1, AUTH, { secret })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json<WebhookBody>().secret, secret)
    assert.equal(await secretOf(app, 1), secret)
  }
})

test('a malformed secret is a 400 and changes nothing', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  const before = await secretOf(app, 1)
  const shape = 'body/secret must match pattern "^whsec_[A-Za-z0-9+/]{32,88}={0,2}$"'
  const bounds = 'A secret is whsec_ and 24 to 64 random bytes in base64'
  for (const [secret, message] of [
    ['whsec_mine', shape],
    [MINE.slice('whsec_'.length), shape],
    [`whsec_${Buffer.alloc(23, 1).toString('base64')}`, shape],
    [`whsec_${Buffer.alloc(65, 1).toString('base64')}`, bounds],
    [`whsec_${Buffer.alloc(25, 1).toString('base64')}=`, shape],
    [`whsec_${'A'.repeat(33)}`, bounds]
  ] as const) {
    assertError(await rotate(app, 1, AUTH, { secret }), 400, message)
  }
  assertError(await rotate(app, 1, AUTH, { key: MINE }), 400, "body has unknown property 'key'")
  assert.equal(await secretOf(app, 1), before)
})

test('a secret without entropy (one byte repeated, all zeros included) is a 400 and changes nothing', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  const before = await secretOf(app, 1)
  for (const repeated of [Buffer.alloc(32), Buffer.alloc(24, 0xff), Buffer.alloc(64, 7)]) {
    assertError(await rotate(app, 1, AUTH, { secret: `whsec_${repeated.toString('base64')}` }), 400,
      'A secret of one byte repeated has no entropy: give random bytes (or send no secret to get some)')
  }
  assert.equal(await secretOf(app, 1), before)
  const almost = Buffer.alloc(32)
  almost[31] = 1
  assert.equal((await rotate(app, 1, AUTH, { secret: `whsec_${almost.toString('base64')}` })).statusCode, 200,
    'two distinct bytes pass')
})

test('every replaced secret keeps signing for its own 24 hours: two rotations, three signatures ' +
  '(receiver on 127.0.0.1)', async (t) => {
  const receiver = await startReceiver(t)
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1' })
  const created = await createWebhook(app, { url: `${receiver.origin}/hooks`, events: [PLANT_CREATED] })
  const first = (await rotate(app, created.id)).json<WebhookBody>()
  const second = (await rotate(app, created.id, AUTH, { secret: MINE })).json<WebhookBody>()
  await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'Fern' } })
  const [request] = await receiver.waitFor(1)
  assert.ok(request !== undefined)
  assert.equal(String(request.headers['webhook-signature']).split(' ').length, 3)
  // Any one secret alone verifies the delivery (Standard Webhooks accepts any one matching signature).
  for (const secret of [second.secret, first.secret, created.secret]) {
    assert.equal((verifyWebhook(secret, request) as { type: string }).type, PLANT_CREATED)
  }
})

test('another token\'s subscription or a missing one: 404, and the secret stays', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = await createWebhook(app)
  assertError(await rotate(app, 1, OTHER_AUTH), 404, 'Webhook subscription 1 not found')
  assertError(await rotate(app, 2), 404, 'Webhook subscription 2 not found')
  assertError(await app.inject({ url: '/webhooks/1/secret', headers: OTHER_AUTH }), 404,
    'Webhook subscription 1 not found')
  assert.equal(await secretOf(app, 1), created.secret)
})

test('a malformed id is a 400; a body not JSON a 415; without a token, 401', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = await createWebhook(app)
  assertError(await rotate(app, 'x'), 400, 'params/id must match format "int64"')
  assertError(await app.inject({ url: '/webhooks/x/secret', headers: AUTH }), 400,
    'params/id must match format "int64"')
  const text = await app.inject({
    method: 'POST',
    url: '/webhooks/1/rotate-secret',
    headers: { ...AUTH, 'content-type': 'text/plain' },
    payload: 'whsec_x'
  })
  assert.equal(text.statusCode, 415)
  assertError(await rotate(app, 1, {}), 401, /authorization/i)
  assertError(await app.inject({ url: '/webhooks/1/secret' }), 401, /authorization/i)
  assert.equal(await secretOf(app, 1), created.secret)
})
