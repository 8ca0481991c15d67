import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUDIENCE, startProvider, signingKey } from '../../../helpers/oidc-provider.js'
import { buildTestApp, TOKEN } from '../../../helpers/app.js'
import {
  PLANT_CREATED, PLANT_DELETED, PLANT_UPDATED, PLANTS_READ, READ_SCOPES, WRITE_SCOPES
} from '../../../helpers/resources.js'
import { scopedToken, tokensFile } from '../../../helpers/scoped-tokens.js'
import { deliveriesWhen, PUBLIC_RECEIVER, type WebhookBody } from '../../../helpers/webhooks.js'
import { cleanupStack, tempDatabaseFile, type Cleanup } from '../../../helpers/cleanup.js'
import { captureLog } from '../../../helpers/app.js'
import { scratchDatabaseUrl } from '../../../helpers/postgres.js'

// On the store TEST_APP_STORE picks (CI runs both).

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

function assertNeedsRead (res: Awaited<ReturnType<FastifyInstance['inject']>>, label: string): void {
  assert.equal(res.statusCode, 403, label)
  assert.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="${PLANTS_READ}"`, label)
  assert.deepEqual(res.json(),
    { error: 403, message: `This token lacks the scope ${PLANTS_READ}, which this operation needs` }, label)
}

test('subscribing to plant events needs plants:read (or plants:write): webhooks alone is a 403 ' +
  'naming it, and nothing is created', async (t) => {
  const integrator = scopedToken('integrator', ['webhooks'])
  // Every resource's read (or write) scope: a subscription to every event type needs them all.
  const reader = scopedToken('reader', ['webhooks', ...READ_SCOPES])
  const writer = scopedToken('writer', ['webhooks', ...WRITE_SCOPES])
  const app = await buildTestApp(t, { API_TOKENS_FILE: tokensFile([integrator, reader, writer]) })
  for (const events of [undefined, [PLANT_CREATED], [PLANT_DELETED, PLANT_UPDATED]]) {
    const res = await app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: bearer(integrator.token),
      payload: { url: PUBLIC_RECEIVER, ...(events !== undefined && { events }) }
    })
    assertNeedsRead(res, JSON.stringify(events))
  }
  assert.deepEqual((await app.inject({ url: '/webhooks', headers: bearer(integrator.token) })).json(), [])
  // An unknown event type stays a 400, whatever the scopes.
  assert.equal(
    (await app.inject(
      {
        method: 'POST',
        url: '/webhooks',
        headers: bearer(integrator.token),
        payload: { url: PUBLIC_RECEIVER, events: ['plant.eaten'] }
      })).statusCode, 400)
  for (const token of [reader, writer]) {
    const res = await app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: bearer(token.token),
      payload: { url: PUBLIC_RECEIVER }
    })
    assert.equal(res.statusCode, 201, token.name)
  }
})

async function provider (t: Cleanup) {
  const op = await startProvider([await signingKey('key-1')])
  t.after(op.stop)
  return op
}

test('changing the event list needs the read scope again; deliveries already recorded are ' +
  'readable by their owner only', async (t) => {
  const op = await provider(t)
  // One subject (the client `admin`) with two tokens: all of its scopes, and webhooks only.
  const app = await buildTestApp(t, { OIDC_ISSUER: op.issuer, OIDC_AUDIENCE: AUDIENCE })
  const full = bearer(await op.token('admin'))
  const narrow = bearer(await op.token('admin', 'webhooks'))
  const created = await app.inject({
    method: 'POST', url: '/webhooks', headers: full, payload: { url: PUBLIC_RECEIVER, events: [PLANT_CREATED] }
  })
  assert.equal(created.statusCode, 201)
  const { id } = created.json<WebhookBody>()

  for (const events of [[PLANT_CREATED, PLANT_UPDATED], [PLANT_DELETED], [PLANT_CREATED]]) {
    const res = await app.inject({ method: 'PATCH', url: `/webhooks/${id}`, headers: narrow, payload: { events } })
    assertNeedsRead(res, JSON.stringify(events))
  }
  const other = await app.inject({
    method: 'PATCH',
    url: `/webhooks/${id}`,
    headers: narrow,
    payload: { description: 'no event change' }
  })
  assert.equal(other.statusCode, 200, 'a change that leaves the event list alone needs webhooks only')
  assert.deepEqual(other.json<WebhookBody>().events, [PLANT_CREATED])
  const widened = await app.inject({
    method: 'PATCH', url: `/webhooks/${id}`, headers: full, payload: { events: [PLANT_CREATED, PLANT_DELETED] }
  })
  assert.equal(widened.statusCode, 200)

  // A delivery recorded for the subscription: its owner reads it (with the read scope, issue 55); another
  // caller, whatever its scopes, finds nothing.
  assert.equal(
    (await app.inject({ method: 'POST', url: '/plants', headers: full, payload: { name: 'Fern' } })).statusCode, 201)
  const [delivery] = await deliveriesWhen(app, id, (deliveries) => deliveries.length === 1, narrow)
  assert.ok(delivery !== undefined)
  const own = await app.inject({ url: `/webhooks/${id}/deliveries/${delivery.id}`, headers: full })
  assert.equal(own.statusCode, 200)
  assert.equal(own.json<{ eventType: string }>().eventType, PLANT_CREATED)
  for (const stranger of [bearer(TOKEN), bearer(await op.token('integrator'))]) {
    for (const url of [`/webhooks/${id}/deliveries/${delivery.id}`, `/webhooks/${id}/deliveries`]) {
      assert.equal((await app.inject({ url, headers: stranger })).statusCode, 404, url)
    }
  }
})

interface Inject { method: 'GET' | 'HEAD' | 'PATCH' | 'POST', url: string, payload?: Record<string, unknown> }

/**
 * Every operation that exposes or redirects a subscription's events (issue 55): a delivery's
 * payload (GET and HEAD), a new URL, enabling it, a retry, a recovery, a test event; each with the
 * status it answers a token that has the read scopes.
 */
const exposing = (id: number, deliveryId: number): Array<{ label: string, request: Inject, status: number }> => [
  { label: 'a delivery', request: { method: 'GET', url: `/webhooks/${id}/deliveries/${deliveryId}` }, status: 200 },
  {
    label: 'a delivery (HEAD)',
    request: { method: 'HEAD', url: `/webhooks/${id}/deliveries/${deliveryId}` },
    status: 200
  },
  {
    label: 'a new URL',
    request: { method: 'PATCH', url: `/webhooks/${id}`, payload: { url: 'https://93.184.216.35/moved' } },
    status: 200
  },
  {
    label: 'enabling it',
    request: { method: 'PATCH', url: `/webhooks/${id}`, payload: { disabled: false } },
    status: 200
  },
  { label: 'a retry', request: { method: 'POST', url: `/webhooks/${id}/deliveries/${deliveryId}/retry` }, status: 202 },
  {
    label: 'a recovery',
    request: { method: 'POST', url: `/webhooks/${id}/recover`, payload: { since: '2000-01-01T00:00:00Z' } },
    status: 202
  },
  { label: 'a test event', request: { method: 'POST', url: `/webhooks/${id}/test` }, status: 200 }
]

async function assertExposuresNeedRead (app: FastifyInstance, id: number, deliveryId: number,
  headers: Record<string, string>): Promise<void> {
  const before = (await app.inject({ url: `/webhooks/${id}`, headers })).json<WebhookBody>()
  for (const { label, request } of exposing(id, deliveryId)) {
    const res = await app.inject({ ...request, headers })
    if (request.method === 'HEAD') {
      assert.equal(res.statusCode, 403, label)
      assert.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="${PLANTS_READ}"`, label)
    } else assertNeedsRead(res, label)
  }
  const after = (await app.inject({ url: `/webhooks/${id}`, headers })).json<WebhookBody>()
  assert.deepEqual(after, before, 'nothing changed: not the URL, not whether it is enabled')
}

test('a token of the same principal with webhooks only cannot read, redirect, retry, recover or test a ' +
  'subscription\'s events: 403 naming the scope', async (t) => {
  const op = await provider(t)
  const app = await buildTestApp(t, { OIDC_ISSUER: op.issuer, OIDC_AUDIENCE: AUDIENCE })
  const full = bearer(await op.token('admin'))
  const narrow = bearer(await op.token('admin', 'webhooks'))
  const created = await app.inject({
    method: 'POST',
    url: '/webhooks',
    headers: full,
    payload: { url: PUBLIC_RECEIVER }
  })
  assert.equal(created.statusCode, 201)
  const { id } = created.json<WebhookBody>()
  assert.equal(
    (await app.inject({ method: 'POST', url: '/plants', headers: full, payload: { name: 'Fern' } })).statusCode, 201)
  const [delivery] = await deliveriesWhen(app, id, (deliveries) => deliveries.length === 1, narrow)
  assert.ok(delivery !== undefined)
  // What tells nothing of the events stays with webhooks alone: the subscription, its delivery list, pausing it.
  assert.equal(
    (await app.inject(
      { method: 'PATCH', url: `/webhooks/${id}`, headers: narrow, payload: { disabled: true } })).statusCode, 200)
  await assertExposuresNeedRead(app, id, Number(delivery.id), narrow)
  // Another principal, whatever its scopes, finds nothing to be refused: 404 first.
  const stranger = bearer(TOKEN)
  for (const { label, request } of exposing(id, Number(delivery.id))) {
    assert.equal((await app.inject({ ...request, headers: stranger })).statusCode, 404, label)
  }
  // With the read scope, each goes through.
  for (const { label, request, status } of exposing(id, Number(delivery.id))) {
    const res = await app.inject({ ...request, headers: full })
    assert.equal(res.statusCode, status, `${label}: ${res.body}`)
  }
  assert.equal((await app.inject({ url: `/webhooks/${id}`, headers: narrow })).json<WebhookBody>().url,
    'https://93.184.216.35/moved')
})

test('a named token narrowed since its subscriptions were made: after the restart they are ' +
  'paused, say why, and cannot be read through', async (t) => {
  const cleanup = cleanupStack(t)
  const database = process.env.TEST_APP_STORE === 'postgres'
    ? scratchDatabaseUrl(cleanup).url
    : tempDatabaseFile(
      cleanup)
  const integrator = scopedToken('integrator', ['webhooks', ...READ_SCOPES])
  const narrowed = { ...integrator, scopes: ['webhooks' as const] }
  const auth = bearer(integrator.token)
  const start = async (tokens: ReturnType<typeof scopedToken>, log?: ReturnType<typeof captureLog>) =>
    await buildTestApp(cleanup, {
      DATABASE_URL: database,
      API_TOKENS: TOKEN,
      API_TOKENS_FILE: tokensFile([tokens]),
      ...(log !== undefined && { LOG_LEVEL: 'warn' })
    },
    log === undefined ? {} : { logStream: log.stream })

  const first = await start(integrator)
  const created = await first.inject({
    method: 'POST',
    url: '/webhooks',
    headers: auth,
    payload: { url: PUBLIC_RECEIVER }
  })
  assert.equal(created.statusCode, 201)
  const { id } = created.json<WebhookBody>()
  assert.equal(
    (await first.inject(
      { method: 'POST', url: '/plants', headers: bearer(TOKEN), payload: { name: 'Fern' } })).statusCode, 201)
  const [delivery] = await deliveriesWhen(first, id, (deliveries) => deliveries.length === 1, auth)
  assert.ok(delivery !== undefined)
  await first.close()

  const log = captureLog()
  const second = await start(narrowed, log)
  const reason = `Paused: the token that owns it lacks the scope ${PLANTS_READ}, ` +
    'which its events need; enabling it needs that scope'
  const paused = (await second.inject(
    { url: `/webhooks/${id}`, headers: auth })).json<WebhookBody & { disabledReason?: string }>()
  assert.deepEqual([paused.disabled, paused.disabledReason], [true, reason])
  assert.deepEqual((await second.inject({ url: '/webhooks', headers: auth })).json<unknown[]>(), [paused])
  const lines = log.text().split('\n').filter((line) => line.includes('webhook subscription paused'))
  assert.equal(lines.length, 1, log.text())
  assert.deepEqual(JSON.parse(lines[0] ?? '{}').webhook,
    { subscriptionId: String(id), owner: 'token:integrator', scope: PLANTS_READ })
  // It receives nothing more: a new plant's event is not its.
  assert.equal(
    (await second.inject(
      { method: 'POST', url: '/plants', headers: bearer(TOKEN), payload: { name: 'Ivy' } })).statusCode, 201)
  assert.deepEqual(
    (await second.inject({ url: `/webhooks/${id}/deliveries`, headers: auth })).json<Array<{ id: number }>>().map(
      ({ id }) => id), [delivery.id])
  await assertExposuresNeedRead(second, id, Number(delivery.id), auth)
  await second.close()
  // Started again as narrow: still paused, and the log says so again.
  const againLog = captureLog()
  const again = await start(narrowed, againLog)
  assert.deepEqual((await again.inject({ url: `/webhooks/${id}`, headers: auth })).json(), paused)
  const stillPaused = againLog.text().split('\n').filter((line) => line.includes('webhook subscription stays paused'))
  assert.deepEqual(stillPaused.map((line) => JSON.parse(line).webhook),
    [{ subscriptionId: String(id), owner: 'token:integrator', scope: PLANTS_READ }])
  await again.close()

  // Its scopes given back: no reason any more; the owner enables it, and it receives again.
  const third = await start(integrator)
  const restored = (await third.inject(
    { url: `/webhooks/${id}`, headers: auth })).json<WebhookBody & { disabledReason?: string }>()
  assert.deepEqual([restored.disabled, restored.disabledReason], [true, undefined])
  assert.equal(
    (await third.inject(
      { method: 'PATCH', url: `/webhooks/${id}`, headers: auth, payload: { disabled: false } })).statusCode, 200)
  assert.equal(
    (await third.inject(
      { method: 'POST', url: '/plants', headers: bearer(TOKEN), payload: { name: 'Moss' } })).statusCode, 201)
  await deliveriesWhen(third, id, (deliveries) => deliveries.length === 2, auth)
})
