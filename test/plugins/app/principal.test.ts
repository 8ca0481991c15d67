import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { AUTH, captureLog, TOKEN } from '../../helpers/app.js'
import { scopedToken, tokensFile } from '../../helpers/scoped-tokens.js'
import { buildWebhooksApp, createWebhook, PUBLIC_RECEIVER } from '../../helpers/webhooks.js'
import { idempotencyKey } from '../../../src/resources/idempotency.js'
import { webhookOwner } from '../../../src/webhooks/service.js'
import { PLANTS_READ, PLANTS_WRITE } from '../../helpers/resources.js'

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

test('a named token is known by its name: replaced under the same name it keeps its webhooks and ' +
  'idempotency keys', async (t) => {
  const first = scopedToken('integrator', ['webhooks', PLANTS_WRITE])
  const replacement = { ...first, token: scopedToken('x', []).token }
  const other = scopedToken('someone-else', ['webhooks', PLANTS_WRITE])
  const before = tokensFile([first, other])
  // A database that outlives the app: a file, or (TEST_APP_STORE=postgres) the scratch schema, dropped after the test.
  const file = process.env.TEST_APP_STORE === 'postgres'
    ? {}
    : {
        DATABASE_URL: join(
          mkdtempSync(join(tmpdir(), 'plant-store-principal-')), 'plants.db')
      }
  const app = await buildWebhooksApp(t, { API_TOKENS_FILE: before, ...file })
  const hook = await createWebhook(app, { url: PUBLIC_RECEIVER }, bearer(first.token))
  const created = await app.inject({
    method: 'POST',
    url: '/plants',
    headers: { ...bearer(first.token), 'idempotency-key': 'k-1' },
    payload: { name: 'Fern' }
  })
  assert.equal(created.statusCode, 201)
  // Another principal sees neither the subscription nor the key.
  assert.equal((await app.inject({ url: `/webhooks/${hook.id}`, headers: bearer(other.token) })).statusCode, 404)
  const elsewhere = await app.inject({
    method: 'POST',
    url: '/plants',
    headers: { ...bearer(other.token), 'idempotency-key': 'k-1' },
    payload: { name: 'Fern' }
  })
  assert.equal(elsewhere.statusCode, 201)
  assert.notEqual(elsewhere.json<{ id: number }>().id, created.json<{ id: number }>().id)
  await app.close()

  // The same database, the entry's token replaced: the name carries the data over.
  const again = await buildWebhooksApp(t, {
    API_TOKENS_FILE: tokensFile([replacement, other]),
    DATABASE_URL: app.config.databaseUrl
  })
  assert.equal((await again.inject({ url: `/webhooks/${hook.id}`, headers: bearer(first.token) })).statusCode, 401)
  assert.equal((await again.inject({ url: `/webhooks/${hook.id}`, headers: bearer(replacement.token) })).statusCode,
    200)
})

test('a plain API_TOKENS token keeps the principal stored before scopes: its digest owns its webhooks and ' +
  'idempotency keys', async (t) => {
  const app = await buildWebhooksApp(t)
  const hook = await createWebhook(app)
  const subscriptions = await app.webhooks.listSubscriptions(webhookOwner(TOKEN), { limit: 10 })
  assert.deepEqual(subscriptions.subscriptions.map(({ id }) => Number(id)), [hook.id])
  const keyed = await app.store.plants.create({ name: 'Fern' },
    idempotencyKey(webhookOwner(TOKEN), 'k-1', [undefined, 'Fern', undefined]), { requestId: 'r-1' })
  const replayed = await app.inject({
    method: 'POST',
    url: '/plants',
    headers: { ...AUTH, 'idempotency-key': 'k-1' },
    payload: { name: 'Fern' }
  })
  assert.equal(replayed.headers['idempotent-replayed'], 'true')
  assert.equal(replayed.json<{ id: number }>().id, Number(keyed.item.id))
})

test('the access log and the rate limit go by the principal: a named token\'s name, never the token', async (t) => {
  const log = captureLog()
  const reader = scopedToken('dashboard', [PLANTS_READ])
  const app = await buildWebhooksApp(t,
    { API_TOKENS_FILE: tokensFile([reader]), LOG_LEVEL: 'info', RATE_LIMIT_MAX: '100', RATE_LIMIT_WINDOW: '600000' },
    { logStream: log.stream })
  const first = await app.inject({ url: '/plants', headers: bearer(reader.token) })
  assert.equal(first.statusCode, 200)
  assert.equal(first.headers['ratelimit-remaining'], '99')
  // Refused for its scope, still counted in the principal's own bucket, not the IP's.
  assert.equal((await app.inject({ method: 'DELETE', url: '/plants/1', headers: bearer(reader.token) })).statusCode,
    403)
  assert.equal((await app.inject({ url: '/plants', headers: bearer(reader.token) })).headers['ratelimit-remaining'],
    '97')
  assert.equal((await app.inject({ url: '/plants', headers: AUTH })).headers['ratelimit-remaining'], '99')
  const lines = log.text().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).filter(
    (line) => line.msg === 'request completed')
  assert.deepEqual(lines.map(({ principal, statusCode }) => ({ principal, statusCode })), [
    { principal: 'dashboard', statusCode: 200 },
    { principal: 'dashboard', statusCode: 403 },
    { principal: 'dashboard', statusCode: 200 },
    { principal: `sha256:${webhookOwner(TOKEN).slice(0, 12)}`, statusCode: 200 }
  ])
  assert.doesNotMatch(log.text(), new RegExp(reader.token))
})
