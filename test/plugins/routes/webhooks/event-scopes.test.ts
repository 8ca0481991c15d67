import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUDIENCE, startProvider, signingKey } from '../../../helpers/oidc-provider.js'
import { buildTestApp, TOKEN } from '../../../helpers/app.js'
import { READ_SCOPES, WRITE_SCOPES } from '../../../helpers/resources.js'
import { scopedToken, tokensFile } from '../../../helpers/scoped-tokens.js'
import { deliveriesWhen, PUBLIC_RECEIVER, type WebhookBody } from '../../../helpers/webhooks.js'
import type { Cleanup } from '../../../helpers/cleanup.js'

// On the store TEST_APP_STORE picks (CI runs both).

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

function assertNeedsRead (res: Awaited<ReturnType<FastifyInstance['inject']>>, label: string): void {
  assert.equal(res.statusCode, 403, label)
  assert.equal(res.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="plants:read"', label)
  assert.deepEqual(res.json(), { error: 403, message: 'This token lacks the scope plants:read, which this operation needs' }, label)
}

test('subscribing to plant events needs plants:read (or plants:write): webhooks alone is a 403 naming it, and nothing is created', async (t) => {
  const integrator = scopedToken('integrator', ['webhooks'])
  // Every resource's read (or write) scope: a subscription to every event type needs them all.
  const reader = scopedToken('reader', ['webhooks', ...READ_SCOPES])
  const writer = scopedToken('writer', ['webhooks', ...WRITE_SCOPES])
  const app = await buildTestApp(t, { API_TOKENS_FILE: tokensFile([integrator, reader, writer]) })
  for (const events of [undefined, ['plant.created'], ['plant.deleted', 'plant.updated']]) {
    const res = await app.inject({ method: 'POST', url: '/webhooks', headers: bearer(integrator.token), payload: { url: PUBLIC_RECEIVER, ...(events !== undefined && { events }) } })
    assertNeedsRead(res, JSON.stringify(events))
  }
  assert.deepEqual((await app.inject({ url: '/webhooks', headers: bearer(integrator.token) })).json(), [])
  // An unknown event type stays a 400, whatever the scopes.
  assert.equal((await app.inject({ method: 'POST', url: '/webhooks', headers: bearer(integrator.token), payload: { url: PUBLIC_RECEIVER, events: ['plant.eaten'] } })).statusCode, 400)
  for (const token of [reader, writer]) {
    const res = await app.inject({ method: 'POST', url: '/webhooks', headers: bearer(token.token), payload: { url: PUBLIC_RECEIVER } })
    assert.equal(res.statusCode, 201, token.name)
  }
})

async function provider (t: Cleanup) {
  const op = await startProvider([await signingKey('key-1')])
  t.after(op.stop)
  return op
}

test('changing the event list needs the read scope again; deliveries already recorded are readable by their owner only', async (t) => {
  const op = await provider(t)
  // One subject (the client `admin`) with two tokens: all of its scopes, and webhooks only.
  const app = await buildTestApp(t, { OIDC_ISSUER: op.issuer, OIDC_AUDIENCE: AUDIENCE })
  const full = bearer(await op.token('admin'))
  const narrow = bearer(await op.token('admin', 'webhooks'))
  const created = await app.inject({ method: 'POST', url: '/webhooks', headers: full, payload: { url: PUBLIC_RECEIVER, events: ['plant.created'] } })
  assert.equal(created.statusCode, 201)
  const { id } = created.json<WebhookBody>()

  for (const events of [['plant.created', 'plant.updated'], ['plant.deleted'], ['plant.created']]) {
    const res = await app.inject({ method: 'PATCH', url: `/webhooks/${id}`, headers: narrow, payload: { events } })
    assertNeedsRead(res, JSON.stringify(events))
  }
  const other = await app.inject({ method: 'PATCH', url: `/webhooks/${id}`, headers: narrow, payload: { description: 'no event change' } })
  assert.equal(other.statusCode, 200, 'a change that leaves the event list alone needs webhooks only')
  assert.deepEqual(other.json<WebhookBody>().events, ['plant.created'])
  const widened = await app.inject({ method: 'PATCH', url: `/webhooks/${id}`, headers: full, payload: { events: ['plant.created', 'plant.deleted'] } })
  assert.equal(widened.statusCode, 200)

  // A delivery recorded for the subscription: its owner reads it; another caller, whatever its scopes, finds nothing.
  assert.equal((await app.inject({ method: 'POST', url: '/plants', headers: full, payload: { name: 'Fern' } })).statusCode, 201)
  const [delivery] = await deliveriesWhen(app, id, (deliveries) => deliveries.length === 1, narrow)
  assert.ok(delivery !== undefined)
  const own = await app.inject({ url: `/webhooks/${id}/deliveries/${delivery.id}`, headers: narrow })
  assert.equal(own.statusCode, 200)
  assert.equal(own.json<{ eventType: string }>().eventType, 'plant.created')
  for (const stranger of [bearer(TOKEN), bearer(await op.token('integrator'))]) {
    for (const url of [`/webhooks/${id}/deliveries/${delivery.id}`, `/webhooks/${id}/deliveries`]) {
      assert.equal((await app.inject({ url, headers: stranger })).statusCode, 404, url)
    }
  }
})
