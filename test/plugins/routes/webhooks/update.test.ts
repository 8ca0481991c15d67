import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH } from '../../../helpers/app.js'
import { assertError, JSON_TYPE } from '../../../helpers/plants.js'
import { KNOWN_EVENT_TYPES_TEXT, PLANT_CREATED, PLANT_DELETED } from '../../../helpers/resources.js'
import {
  buildWebhooksApp, createWebhook, OTHER_AUTH, PUBLIC_RECEIVER, viewOf,
  type WebhookBody
} from '../../../helpers/webhooks.js'

const MERGE_PATCH = { 'content-type': 'application/merge-patch+json' }

const patch = (app: FastifyInstance, id: number | string, body: unknown, headers: Record<string, string> = AUTH) =>
  app.inject({
    method: 'PATCH',
    url: `/webhooks/${id}`,
    headers: { ...MERGE_PATCH, ...headers },
    payload: JSON.stringify(body)
  })

const get = async (app: FastifyInstance,
  id: number): Promise<WebhookBody> => (await app.inject({ url: `/webhooks/${id}`, headers: AUTH })).json<WebhookBody>()

test('a merge patch changes only what it names; "description": null removes the description', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = viewOf(await createWebhook(app, { url: PUBLIC_RECEIVER, description: 'shop' }))
  const res = await patch(app, 1, { events: [PLANT_DELETED, PLANT_CREATED] })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  const updated = res.json<WebhookBody>()
  assert.deepEqual({ ...updated, updatedAt: '' }, { ...created, events: [PLANT_CREATED, PLANT_DELETED], updatedAt: '' })
  assert.ok(updated.updatedAt > created.updatedAt)

  const removed = (await patch(app, 1, { description: null })).json<WebhookBody>()
  assert.equal('description' in removed, false)
  assert.deepEqual(await get(app, 1), removed)
  const described = (await patch(app, 1, { description: 'again', disabled: true })).json<WebhookBody>()
  assert.deepEqual([described.description, described.disabled, described.events, 'secret' in described],
    ['again', true, [PLANT_CREATED, PLANT_DELETED], false])
  const enabled = (await patch(app, 1, { disabled: false })).json<WebhookBody>()
  assert.deepEqual([enabled.description, enabled.disabled], ['again', false])
  // An empty patch changes nothing but updatedAt.
  const empty = await patch(app, 1, {})
  assert.equal(empty.statusCode, 200)
  assert.deepEqual({ ...empty.json<WebhookBody>(), updatedAt: '' }, { ...enabled, updatedAt: '' })
})

test('plain JSON is accepted too; another media type is a 415', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  const res = await app.inject({ method: 'PATCH', url: '/webhooks/1', headers: AUTH, payload: { description: 'json' } })
  assert.equal(res.statusCode, 200)
  assert.equal(res.json<WebhookBody>().description, 'json')
  assertError(
    await app.inject(
      { method: 'PATCH', url: '/webhooks/1', headers: { ...AUTH, 'content-type': 'text/plain' }, payload: '{}' }), 415,
    'Unsupported Media Type')
})

test('a new URL is checked as on create: refused ones are 400s and change nothing', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = viewOf(await createWebhook(app))
  for (const [url, message] of [
    ['http://10.0.0.1/',
      'The webhook host 10.0.0.1 is a non-public (private) address; only public addresses are allowed'],
    ['http://169.254.169.254/',
      'The webhook host 169.254.169.254 is a non-public (linkLocal) address; only public addresses are allowed'],
    ['ftp://93.184.216.34/', 'The webhook URL must use http or https'],
    ['https://a:b@93.184.216.34/', 'The webhook URL must not contain credentials'],
    ['http://93.184.216.34:0/', 'The webhook URL has port 0'],
    [`${PUBLIC_RECEIVER}/${'a'.repeat(2048)}`, 'body/url must NOT have more than 2048 characters'],
    ['relative', 'body/url must match format "uri"']
  ] as const) {
    assertError(await patch(app, 1, { url }), 400, message)
  }
  assertError(await patch(app, 1, { url: null }), 400, 'body/url must be string')
  assert.deepEqual(await get(app, 1), created)
  const moved = await patch(app, 1, { url: 'http://93.184.216.34:8080/moved' })
  assert.equal(moved.statusCode, 200)
  assert.equal(moved.json<WebhookBody>().url, 'http://93.184.216.34:8080/moved')
})

test('invalid events, description or disabled, and unknown fields, are 400s that change nothing', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = viewOf(await createWebhook(app))
  assertError(await patch(app, 1, { events: ['plant.moved'] }), 400,
    `body/events/0 must be one of ${KNOWN_EVENT_TYPES_TEXT}`)
  assertError(await patch(app, 1, { events: [] }), 400, 'body/events must NOT have fewer than 1 items')
  assertError(await patch(app, 1, { events: null }), 400, 'body/events must be array')
  assertError(await patch(app, 1, { description: 'd'.repeat(501) }), 400,
    'body/description must NOT have more than 500 characters')
  assertError(await patch(app, 1, { disabled: null }), 400, 'body/disabled must be boolean')
  for (const field of ['secret', 'id', 'updatedAt', 'colour']) {
    assertError(await patch(app, 1, { [field]: 'x' }), 400, `body has unknown property '${field}'`)
  }
  assert.deepEqual(await get(app, 1), created)
})

test('another token\'s subscription is a 404 (even with a URL that would be refused), and stays as it ' +
  'was', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = viewOf(await createWebhook(app))
  assertError(await patch(app, 1, { disabled: true }, OTHER_AUTH), 404, 'Webhook subscription 1 not found')
  assertError(await patch(app, 1, { url: 'http://127.0.0.1/' }, OTHER_AUTH), 404, 'Webhook subscription 1 not found')
  assertError(await patch(app, 2, { url: 'http://127.0.0.1/' }), 404, 'Webhook subscription 2 not found')
  assert.deepEqual(await get(app, 1), created)
})

test('a malformed id is a 400; without a token, 401', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  assertError(await patch(app, 'x', {}), 400, 'params/id must match format "int64"')
  assertError(await patch(app, 1, {}, {}), 401, /authorization/i)
})
