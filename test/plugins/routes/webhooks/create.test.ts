import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH, captureLog } from '../../../helpers/app.js'
import { assertError, JSON_TYPE } from '../../../helpers/plants.js'
import {
  KNOWN_EVENT_TYPES_TEXT, PLANT_CREATED, PLANT_DELETED, PLANT_UPDATED, RESOURCE_EVENT_TYPES
} from '../../../helpers/resources.js'
import { until } from '../../../helpers/webhook-receiver.js'
import {
  buildWebhooksApp, deliveriesWhen, OTHER_AUTH, PUBLIC_RECEIVER, SECRET, viewOf,
  type WebhookBody
} from '../../../helpers/webhooks.js'
import type { ResolvedAddress } from '../../../../src/webhooks/url-policy.js'

const post = (payload: unknown, headers: Record<string, string> = AUTH) =>
  ({ method: 'POST' as const, url: '/webhooks', headers, payload: payload as Record<string, unknown> })

const listOf = async (app: FastifyInstance): Promise<unknown> => (await app.inject(
  { url: '/webhooks', headers: AUTH })).json()

/** IP literals only: a host name would need DNS, which tests never use. */
const NON_PUBLIC = [
  ['http://127.0.0.1/', 'loopback'],
  ['http://10.0.0.1/', 'private'],
  ['http://169.254.169.254/latest/meta-data/', 'linkLocal'],
  ['http://[fd00::1]/', 'uniqueLocal'],
  ['http://[::1]:8080/hooks', 'loopback']
] as const

test('a subscription with only a URL: 201, Location, every event type, enabled, a whsec_ ' +
  'secret, no description', async (t) => {
  const app = await buildWebhooksApp(t)
  const res = await app.inject(post({ url: PUBLIC_RECEIVER }))
  assert.equal(res.statusCode, 201, res.body)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  assert.equal(res.headers.location, '/webhooks/1')
  const body = res.json<WebhookBody>()
  assert.deepEqual(Object.keys(body).sort(), ['createdAt', 'disabled', 'events', 'id', 'secret', 'updatedAt', 'url'])
  assert.deepEqual({ ...body, secret: '', createdAt: '', updatedAt: '' }, {
    id: 1, url: PUBLIC_RECEIVER, events: RESOURCE_EVENT_TYPES, disabled: false, secret: '', createdAt: '', updatedAt: ''
  })
  assert.match(body.secret, SECRET)
  assert.equal(Buffer.from(body.secret.slice('whsec_'.length), 'base64').length, 32)
  assert.equal(new Date(body.createdAt).toISOString(), body.createdAt)
  assert.equal(body.updatedAt, body.createdAt)
  // What the Location names is the subscription.
  assert.deepEqual((await app.inject({ url: '/webhooks/1', headers: AUTH })).json(), viewOf(body))
  assert.deepEqual((await app.inject({ url: '/webhooks/1/secret', headers: AUTH })).json(), { secret: body.secret })
})

test('events are normalised (the canonical order, each once); description and disabled are ' +
  'kept; each subscription has its own id and secret', async (t) => {
  const app = await buildWebhooksApp(t)
  const res = await app.inject(post({
    url: 'http://93.184.216.34:8080/a?b=c',
    events: [PLANT_DELETED, PLANT_CREATED, PLANT_CREATED],
    description: 'shop',
    disabled: true
  }))
  assert.equal(res.statusCode, 201, res.body)
  const first = res.json<WebhookBody>()
  assert.deepEqual({ url: first.url, events: first.events, description: first.description, disabled: first.disabled },
    {
      url: 'http://93.184.216.34:8080/a?b=c',
      events: [PLANT_CREATED, PLANT_DELETED],
      description: 'shop',
      disabled: true
    })
  const second = await app.inject(post({
    url: PUBLIC_RECEIVER, events: [PLANT_UPDATED], description: '', disabled: false
  }))
  assert.equal(second.statusCode, 201)
  assert.equal(second.headers.location, '/webhooks/2')
  const body = second.json<WebhookBody>()
  assert.deepEqual([body.id, body.events, body.description, body.disabled], [2, [PLANT_UPDATED], '', false])
  assert.notEqual(body.secret, first.secret)
})

test('the URL must be absolute http(s), without credentials, at most 2048 characters: else 400 ' +
  'and nothing is created', async (t) => {
  const app = await buildWebhooksApp(t)
  for (const url of ['ftp://93.184.216.34/hooks', 'javascript:alert(1)', 'file:///etc/passwd',
    'mailto:hooks@example.com']) {
    assertError(await app.inject(post({ url })), 400, 'The webhook URL must use http or https')
  }
  assertError(await app.inject(post({ url: 'https://user:pass@93.184.216.34/hooks' })), 400,
    'The webhook URL must not contain credentials')
  assertError(await app.inject(post({ url: 'https://user@93.184.216.34/hooks' })), 400,
    'The webhook URL must not contain credentials')
  for (const url of ['https://93.184.216.34:0/hooks', 'http://93.184.216.34:00/', 'http://[2606:4700::1111]:0/']) {
    assertError(await app.inject(post({ url })), 400, 'The webhook URL has port 0')
  }
  for (const url of ['/hooks', 'hooks', '']) {
    assertError(await app.inject(post({ url })), 400, 'body/url must match format "uri"')
  }
  const base = `${PUBLIC_RECEIVER}/`
  assertError(await app.inject(post({ url: base + 'a'.repeat(2049 - base.length) })), 400,
    'body/url must NOT have more than 2048 characters')
  assertError(await app.inject(post({ url: 5 })), 400, 'body/url must be string')
  assertError(await app.inject(post({})), 400, "body must have property 'url'")
  assert.deepEqual(await listOf(app), [])
  // 2048 characters are accepted.
  const longest = await app.inject(post({ url: base + 'a'.repeat(2048 - base.length) }))
  assert.equal(longest.statusCode, 201, longest.body)
})

test('a loopback, private, link-local or unique-local address is refused with 400 unless ' +
  'WEBHOOK_ALLOW_PRIVATE_URLS=1', async (t) => {
  const app = await buildWebhooksApp(t)
  for (const [url, range] of NON_PUBLIC) {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '')
    assertError(await app.inject(post({ url })), 400,
      `The webhook host ${host} is a non-public (${range}) address; only public addresses are allowed`)
  }
  assert.deepEqual(await listOf(app), [])

  const permissive = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1' })
  for (const [url] of NON_PUBLIC) {
    const res = await permissive.inject(post({ url }))
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.json<WebhookBody>().url, url)
  }
})

/** Host names answered from a table (tests never use DNS); `slow.example.com` never answers. */
const fakeDns = async (hostname: string): Promise<ResolvedAddress[]> => {
  const table: Record<string, string[]> = {
    vm: ['127.0.0.1'],
    'metadata.internal': ['169.254.169.254'],
    'db.internal': ['fd00::5'],
    'mixed.example.com': ['93.184.216.34', '10.0.0.7'],
    'hooks.example.com': ['93.184.216.34']
  }
  if (hostname === 'slow.example.com') return await new Promise<never>(() => {})
  const addresses = table[hostname]
  if (addresses === undefined) {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })
  }
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
}

test('a host name is never told what it resolves to: only that it is not allowed or does not resolve', async (t) => {
  // The lookup waits WEBHOOK_TIMEOUT_MS at most, as a delivery would.
  const app = await buildWebhooksApp(t, { WEBHOOK_TIMEOUT_MS: '50' }, { webhookResolve: fakeDns })
  for (const host of ['vm', 'metadata.internal', 'db.internal', 'mixed.example.com']) {
    const res = await app.inject(post({ url: `http://${host}:8080/hooks` }))
    assertError(res, 400, `The webhook host ${host} is not allowed: it must resolve to public addresses only`)
    assert.doesNotMatch(res.body, /127\.0\.0\.1|169\.254|fd00|10\.0\.0\.7|loopback|linkLocal|uniqueLocal|private/)
  }
  // A name that does not exist and one whose lookup outlasts the time limit get the same answer.
  for (const host of ['nowhere.example.com', 'slow.example.com']) {
    const res = await app.inject(post({ url: `https://${host}/` }))
    assertError(res, 400, `The webhook host ${host} does not resolve`)
  }
  assert.deepEqual(await listOf(app), [])
  const res = await app.inject(post({ url: 'https://hooks.example.com/plants' }))
  assert.equal(res.statusCode, 201, res.body)
  // A changed URL is checked the same way.
  const update = await app.inject({
    method: 'PATCH',
    url: '/webhooks/1',
    headers: AUTH,
    payload: { url: 'http://vm/' }
  })
  assertError(update, 400, 'The webhook host vm is not allowed: it must resolve to public addresses only')
  assertError(await app.inject(
    { method: 'PATCH', url: '/webhooks/1', headers: AUTH, payload: { url: 'http://slow.example.com/' } }), 400,
  'The webhook host slow.example.com does not resolve')
})

test('events: an unknown type, none, or not a list of strings is a 400', async (t) => {
  const app = await buildWebhooksApp(t)
  const known = KNOWN_EVENT_TYPES_TEXT
  assertError(await app.inject(post({ url: PUBLIC_RECEIVER, events: ['plant.moved'] })), 400,
    `body/events/0 must be one of ${known}`)
  assertError(await app.inject(post({ url: PUBLIC_RECEIVER, events: [PLANT_CREATED, 'Plant.Created'] })), 400,
    `body/events/1 must be one of ${known}`)
  assertError(await app.inject(post({ url: PUBLIC_RECEIVER, events: [] })), 400,
    'body/events must NOT have fewer than 1 items')
  assertError(await app.inject(post({ url: PUBLIC_RECEIVER, events: PLANT_CREATED })), 400, 'body/events must be array')
  assertError(await app.inject(post({ url: PUBLIC_RECEIVER, events: null })), 400, 'body/events must be array')
  assert.deepEqual(await listOf(app), [])
})

test('an unknown field (a secret or an id included) is a 400 that names it; description and ' +
  'disabled are checked', async (t) => {
  const app = await buildWebhooksApp(t)
  for (const field of ['secret', 'id', 'createdAt', 'colour']) {
    assertError(await app.inject(post({ url: PUBLIC_RECEIVER, [field]: 'x' })), 400,
      `body has unknown property '${field}'`)
  }
  assertError(await app.inject(post({ url: PUBLIC_RECEIVER, description: 'd'.repeat(501) })), 400,
    'body/description must NOT have more than 500 characters')
  assertError(await app.inject(post({ url: PUBLIC_RECEIVER, description: 'a\u0000b' })), 400,
    'body/description must not contain NUL (U+0000) or unpaired UTF-16 surrogates (U+D800 to U+DFFF)')
  assertError(await app.inject(post({ url: PUBLIC_RECEIVER, description: null })), 400,
    'body/description must be string')
  assertError(await app.inject(post({ url: PUBLIC_RECEIVER, disabled: 'yes' })), 400, 'body/disabled must be boolean')
  assertError(await app.inject(post([PUBLIC_RECEIVER])), 400, 'body must be object')
  // A member named twice (I-JSON): the URL checked must be the only one sent.
  assertError(await app.inject(
    post(`{"url":"${PUBLIC_RECEIVER}","url":"http://127.0.0.1/"}`, { ...AUTH, 'content-type': 'application/json' })),
  400,
  'body has the member "url" more than once: member names must be unique (I-JSON, RFC 7493)')
  assert.deepEqual(await listOf(app), [])
  const longest = await app.inject(post({ url: PUBLIC_RECEIVER, description: 'd'.repeat(500) }))
  assert.equal(longest.statusCode, 201)
})

test('at most WEBHOOK_MAX_SUBSCRIPTIONS per token (25 by default): one more is a 409 until one ' +
  'is deleted', async (t) => {
  const app = await buildWebhooksApp(t, { WEBHOOK_MAX_SUBSCRIPTIONS: '2' })
  for (let i = 0; i < 2; i++) assert.equal((await app.inject(post({ url: PUBLIC_RECEIVER }))).statusCode, 201)
  const refused = await app.inject(post({ url: PUBLIC_RECEIVER }))
  assertError(refused, 409, 'This token already has 2 webhook subscriptions, the most allowed: delete one first')
  assert.equal(refused.headers['content-type'], JSON_TYPE)
  assert.equal((await app.inject(post({ url: PUBLIC_RECEIVER }, OTHER_AUTH))).statusCode, 201,
    'each token has a limit of its own')
  assert.equal((await app.inject({ method: 'DELETE', url: '/webhooks/1', headers: AUTH })).statusCode, 204)
  assert.equal((await app.inject(post({ url: PUBLIC_RECEIVER }))).statusCode, 201)
  const byDefault = await buildWebhooksApp(t)
  for (let i = 0; i < 25; i++) assert.equal((await byDefault.inject(post({ url: PUBLIC_RECEIVER }))).statusCode, 201)
  assertError(await byDefault.inject(post({ url: PUBLIC_RECEIVER })), 409,
    'This token already has 25 webhook subscriptions, the most allowed: delete one first')
})

test('without a valid token: 401 and nothing is created', async (t) => {
  const app = await buildWebhooksApp(t)
  assertError(await app.inject(post({ url: PUBLIC_RECEIVER }, {})), 401, /authorization/i)
  const wrong = await app.inject(
    post({ url: PUBLIC_RECEIVER }, { authorization: 'Bearer not-a-configured-token-0123456789abcdef' }))
  assertError(wrong, 401, /invalid/i)
  assert.equal(wrong.headers['www-authenticate'], 'Bearer')
  assert.deepEqual(await listOf(app), [])
})

test('secrets never reach the log, even at trace level with deliveries signed by two of them', async (t) => {
  const log = captureLog()
  const app = await buildWebhooksApp(t, { LOG_LEVEL: 'trace' }, { logStream: log.stream })
  const created = await app.inject(post({ url: PUBLIC_RECEIVER }))
  const rotated = await app.inject({ method: 'POST', url: '/webhooks/1/rotate-secret', headers: AUTH })
  await app.inject({ url: '/webhooks', headers: AUTH })
  await app.inject({ url: '/webhooks/1', headers: AUTH })
  await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'Fern' } })
  await deliveriesWhen(app, 1, ([delivery]) => (delivery?.attempts ?? 0) >= 1)
  await until('the attempt is logged', () => log.text().includes('webhook delivery failed'))
  const secrets = [created.json<WebhookBody>().secret, rotated.json<WebhookBody>().secret]
  assert.equal(secrets.filter((secret) => SECRET.test(secret)).length, 2)
  for (const secret of secrets) {
    assert.equal(log.text().includes(secret.slice('whsec_'.length)), false, 'a secret is in the log')
  }
})
