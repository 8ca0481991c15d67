import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { AUTH } from '../../../helpers/app.js'
import { assertError, JSON_TYPE, nextLink } from '../../../helpers/plants.js'
import {
  buildWebhooksApp, createWebhook, OTHER_AUTH, PUBLIC_RECEIVER, viewOf,
  type WebhookViewBody
} from '../../../helpers/webhooks.js'

const list = (app: FastifyInstance, query: string,
  headers: Record<string, string> = AUTH) => app.inject({ url: `/webhooks${query}`, headers })

async function seed (app: FastifyInstance, count: number,
  headers: Record<string, string> = AUTH): Promise<WebhookViewBody[]> {
  const created: WebhookViewBody[] = []
  for (let i = 0; i < count; i++) {
    created.push(viewOf(await createWebhook(app, { url: `${PUBLIC_RECEIVER}/${i}` }, headers)))
  }
  return created
}

test('no subscriptions: [] and no Link', async (t) => {
  const app = await buildWebhooksApp(t)
  const res = await list(app, '')
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  assert.equal(res.body, '[]')
  assert.equal(res.headers.link, undefined)
})

test('subscriptions in id order, without their secrets; limit defaults to 20, and Link pages on after', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = await seed(app, 21)
  const first = await list(app, '')
  assert.deepEqual(first.json(), created.slice(0, 20))
  assert.equal(nextLink(first.headers.link), '/webhooks?limit=20&after=20')
  const rest = await list(app, '?limit=20&after=20')
  assert.deepEqual(rest.json(), created.slice(20))
  assert.equal(rest.headers.link, undefined)
})

test('limit=2 walks the list page by page through Link', async (t) => {
  const app = await buildWebhooksApp(t)
  const created = await seed(app, 5)
  const pages: unknown[] = []
  let url: string | undefined = '/webhooks?limit=2'
  while (url !== undefined) {
    const res: LightMyRequestResponse = await app.inject({ url, headers: AUTH })
    assert.equal(res.statusCode, 200)
    pages.push(res.json())
    url = nextLink(res.headers.link)
  }
  assert.deepEqual(pages, [created.slice(0, 2), created.slice(2, 4), created.slice(4)])
})

test('another token\'s subscriptions are never listed, and paging skips them', async (t) => {
  const app = await buildWebhooksApp(t)
  const mine = viewOf(await createWebhook(app))
  const theirs = viewOf(await createWebhook(app, { url: PUBLIC_RECEIVER }, OTHER_AUTH))
  const mine2 = viewOf(await createWebhook(app))
  assert.deepEqual([mine.id, theirs.id, mine2.id], [1, 2, 3])
  assert.deepEqual((await list(app, '')).json(), [mine, mine2])
  assert.deepEqual((await list(app, '', OTHER_AUTH)).json(), [theirs])
  const page = await list(app, '?limit=1')
  assert.deepEqual(page.json(), [mine])
  assert.equal(nextLink(page.headers.link), '/webhooks?limit=1&after=1')
  assert.deepEqual((await list(app, '?limit=1&after=1')).json(), [mine2])
})

test('invalid or unknown query parameters are 400s', async (t) => {
  const app = await buildWebhooksApp(t)
  assertError(await list(app, '?limit=0'), 400, 'querystring/limit must be >= 1')
  assertError(await list(app, '?limit=101'), 400, 'querystring/limit must be <= 100')
  for (const limit of ['1e1', '+5', '05', ' 5']) {
    assertError(await list(app, `?limit=${encodeURIComponent(limit)}`), 400,
      'querystring/limit must be a canonical decimal integer')
  }
  assertError(await list(app, '?after=x'), 400, 'querystring/after must match format "int64"')
  assertError(await list(app, '?after=9223372036854775808'), 400, 'querystring/after must match format "int64"')
  assertError(await list(app, '?before=1'), 400, "querystring has unknown property 'before'")
  assertError(await list(app, '?after=%FF'), 400, 'querystring/after is not percent-encoded UTF-8')
  assertError(await list(app, '?limit=%ED%A0%80'), 400, 'querystring/limit is not percent-encoded UTF-8')
})

test('without a token: 401', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  assertError(await list(app, '', {}), 401, /authorization/i)
})
