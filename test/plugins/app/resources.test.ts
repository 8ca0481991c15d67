import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { Validator } from '@seriousme/openapi-schema-validator'
import { RESOURCES } from '../../../src/resources/index.js'
import { defineResource } from '../../../src/resources/fields.js'
import { PLANT_FIELDS, PLANTS } from '../../../src/resources/plants.js'
import { resourceScope } from '../../../src/auth/scopes.js'
import { tokenDigest } from '../../../src/auth/tokens.js'
import { eventTypesOf } from '../../../src/webhooks/events.js'
import { AUTH, buildTestApp } from '../../helpers/app.js'
import { cleanupStack, tempDatabaseFile } from '../../helpers/cleanup.js'
import { scratchDatabaseUrl } from '../../helpers/postgres.js'
import { apiTestDatabases } from '../../helpers/databases.js'
import { AUTH_A, buildSandboxApp, sandboxDatabases } from '../../helpers/sandbox.js'
import { assertError } from '../../helpers/plants.js'
import { grantingScopes, READ_SCOPES, RESOURCE_EVENT_TYPES, resourceOperations } from '../../helpers/resources.js'
import { scopedToken, type ScopedToken } from '../../helpers/scoped-tokens.js'
import {
  buildWebhooksApp, createWebhook, deliveriesWhen, PUBLIC_RECEIVER, type DeliveryBody, type WebhookBody
} from '../../helpers/webhooks.js'

/**
 * buildApp serves the resources it is given: routes, scopes, the auth check, plain tokens' scopes,
 * shared schemas, the document and the store (each tenant's in a sandbox) follow the list, not the module's
 * RESOURCES. The resource here is declared in this file alone: the plants' declaration under other names,
 * in a table of its own. The names are its own too: `pots` is the trial resource of
 * test/src/store/second-resource.test.ts and docs/architecture.md.
 */

const TRAYS = defineResource({
  collection: 'trays',
  name: 'tray',
  title: 'Tray',
  fields: PLANT_FIELDS,
  bodies: {
    create: 'A tray to create',
    replace: { description: 'A full replacement of a tray', example: { name: 'Terracotta' } },
    patch: { description: 'A JSON merge patch of a tray', example: { tag: null } }
  },
  texts: { ...PLANTS.texts, tag: 'The trays resource', scopes: { read: 'List and get trays', write: 'Change trays' } }
})

interface Operation { operationId: string, 'x-scopes'?: string[], tags?: string[] }
interface Document {
  paths: Record<string, Record<string, Operation>>
  tags: Array<{ name: string, description: string }>
  components: { schemas: Record<string, unknown>, securitySchemes: { bearerAuth: { description: string } } }
}

test('an app given another resource documents it: its paths, operations, scopes, tag and schemas', async (t) => {
  const app = await buildTestApp(t, {}, { resources: [...RESOURCES, TRAYS] })
  const res = await app.inject({ url: '/openapi.json' })
  assert.equal(res.statusCode, 200)
  const document = res.json<Document>()
  assert.equal((await new Validator().validate(res.json())).valid, true)
  for (const { path, method, operationId, access } of resourceOperations(TRAYS)) {
    const operation = document.paths[path]?.[method]
    assert.equal(operation?.operationId, operationId, `${method} ${path}`)
    assert.deepEqual(operation['x-scopes'], grantingScopes(TRAYS, access), operationId)
    assert.deepEqual(operation.tags, ['trays'], operationId)
  }
  assert.deepEqual(document.tags.map(({ name }) => name),
    [...RESOURCES.map(({ collection }) => collection), 'trays', 'webhooks', 'service'])
  for (const name of ['Tray', 'TrayList', 'NewTray', 'TrayUpdate', 'TrayPatch']) {
    assert.ok(name in document.components.schemas, name)
  }
  assert.match(document.components.securitySchemes.bearerAuth.description,
    /`trays:read` \(list and get trays\), `trays:write` \(change trays; includes `trays:read`\), `webhooks`/)
  // The default app is unchanged by it.
  const plain = (await (await buildTestApp(t)).inject({ url: '/openapi.json' })).json<Document>()
  assert.equal(plain.paths['/trays'], undefined)
})

test('its scopes are checked, named tokens may hold them, and a plain token holds them all', async (t) => {
  const reader = scopedToken('reader', [resourceScope(TRAYS, 'read')])
  const hooks = scopedToken('hooks', ['webhooks'])
  const app = await buildTestApp(t, {}, { resources: [...RESOURCES, TRAYS] }, (config) => ({
    ...config,
    namedTokens: [reader, hooks].map(({ name, scopes, token }) => ({ name, scopes, digest: tokenDigest(token) }))
  }))
  const refused = (needed: string) => ({
    status: 403,
    challenge: `Bearer error="insufficient_scope", scope="${needed}"`,
    body: { error: 403, message: `This token lacks the scope ${needed}, which this operation needs` }
  })
  const cases = [
    { token: hooks.token, method: 'GET', url: '/trays', expected: refused('trays:read') },
    { token: reader.token, method: 'POST', url: '/trays', expected: refused('trays:write') },
    { token: reader.token, method: 'DELETE', url: '/trays/1', expected: refused('trays:write') }
  ] as const
  for (const { token, method, url, expected } of cases) {
    const headers = { authorization: `Bearer ${token}` }
    const answer = await app.inject(method === 'POST'
      ? { method, url, headers, payload: {} }
      : {
          method,
          url,
          headers
        })
    assert.equal(answer.statusCode, expected.status, `${method} ${url}`)
    assert.equal(answer.headers['www-authenticate'], expected.challenge)
    assert.deepEqual(answer.json(), expected.body)
  }
  // Past the scope check, validation answers: the reader may read, the plain token may write.
  const badId = { error: 400, message: 'params/id must match format "int64"' }
  assert.deepEqual((await app.inject({ url: '/trays/x', headers: { authorization: `Bearer ${reader.token}` } })).json(),
    badId)
  assert.deepEqual((await app.inject({ method: 'DELETE', url: '/trays/x', headers: AUTH })).json(), badId)
  assert.deepEqual((await app.inject({ method: 'POST', url: '/trays', headers: AUTH, payload: {} })).json(),
    { error: 400, message: "body must have property 'name'" })
})

/** Both resources stored, each in its own table: ids drawn apart, each read back from where it was written. */
async function storesBoth (app: FastifyInstance, headers: Record<string, string>): Promise<void> {
  const create = async (url: string, name: string) =>
    await app.inject({ method: 'POST', url, headers, payload: { name } })
  const tray = await create('/trays', 'Terracotta')
  assert.equal(tray.statusCode, 201, tray.body)
  assert.equal(tray.headers.location, '/trays/1')
  const plant = await create('/plants', 'Monstera')
  assert.equal(plant.statusCode, 201, plant.body)
  assert.equal(plant.headers.location, '/plants/1')
  const read = await app.inject({ url: '/trays/1', headers })
  assert.equal(read.statusCode, 200)
  assert.deepEqual(read.json(), tray.json())
  assert.equal(read.headers.etag, tray.headers.etag)
  assert.deepEqual((await app.inject({ url: '/trays', headers })).json(), [tray.json()])
  assert.equal((await app.inject({ url: '/plants/1', headers })).json<{ name: string }>().name, 'Monstera')
}

for (const database of apiTestDatabases) {
  test(`${database.name}: the app's store serves the resource it is given`, async (t) => {
    const app = await buildTestApp(t, database.env(t), { resources: [...RESOURCES, TRAYS] })
    await storesBoth(app, AUTH)
  })
}

for (const database of sandboxDatabases) {
  test(`${database.name}, SANDBOX=1: each tenant's store serves the resource the app is given`, async (t) => {
    const app = await buildSandboxApp(t, database, { SANDBOX_SEED: 'none' }, { resources: [...RESOURCES, TRAYS] })
    await storesBoth(app, AUTH_A)
  })
}

for (const database of sandboxDatabases) {
  test(`${database.name}, SANDBOX=1: a tenant made before the resource was served gets its table`, async (t) => {
    const url = database.url(cleanupStack(t))
    const same = { name: database.name, url: () => url }
    const before = await buildSandboxApp(t, same, { SANDBOX_SEED: 'none' })
    assert.equal(
      (await before.inject({ method: 'POST', url: '/plants', headers: AUTH_A, payload: { name: 'Fern' } })).statusCode,
      201)
    await before.close()
    const after = await buildSandboxApp(t, same, { SANDBOX_SEED: 'none' }, { resources: [...RESOURCES, TRAYS] })
    const tray = await after.inject({ method: 'POST', url: '/trays', headers: AUTH_A, payload: { name: 'Terracotta' } })
    assert.equal(tray.statusCode, 201, tray.body)
    assert.deepEqual(
      (await after.inject({ url: '/plants', headers: AUTH_A })).json<Array<{ name: string }>>().map(({ name }) => name),
      ['Fern'])
  })
}

test('its events are subscribable: validated, defaulted, delivered, filtered, listed and documented', async (t) => {
  const app = await buildWebhooksApp(t, {}, { resources: [...RESOURCES, TRAYS] })
  const trayEvents = ['tray.created', 'tray.updated', 'tray.deleted']
  assert.deepEqual((await createWebhook(app)).events, [...RESOURCE_EVENT_TYPES, ...trayEvents])
  const subscription = await createWebhook(app, { url: PUBLIC_RECEIVER, events: ['tray.deleted', 'tray.created'] })
  assert.deepEqual(subscription.events, ['tray.created', 'tray.deleted'])
  assert.deepEqual((await app.inject(
    { url: `/webhooks/${subscription.id}`, headers: AUTH })).json<{ events: string[] }>().events,
  ['tray.created', 'tray.deleted'])
  const known = [...RESOURCE_EVENT_TYPES, ...trayEvents].map((type) => `"${type}"`).join(', ')
  assertError(await app.inject(
    { method: 'POST', url: '/webhooks', headers: AUTH, payload: { url: PUBLIC_RECEIVER, events: ['tray.moved'] } }),
  400, `body/events/0 must be one of ${known}`)
  assert.equal(
    (await app.inject({ method: 'POST', url: '/trays', headers: AUTH, payload: { name: 'Terracotta' } })).statusCode,
    201)
  const [delivery] = await deliveriesWhen(app, subscription.id, (deliveries) => deliveries.length === 1)
  assert.equal(delivery?.eventType, 'tray.created')
  const filtered = await app.inject({
    url: `/webhooks/${subscription.id}/deliveries?eventType=tray.created`,
    headers: AUTH
  })
  assert.equal(filtered.statusCode, 200, filtered.body)
  assert.deepEqual(filtered.json<DeliveryBody[]>().map(({ id }) => id), [delivery?.id])
  const catalog = (await app.inject({ url: '/webhooks/event-types', headers: AUTH })).json<Array<{ type: string }>>()
  assert.deepEqual(catalog.map(({ type }) => type), [...RESOURCE_EVENT_TYPES, ...trayEvents, 'webhook.test'])
  const document = (await app.inject({ url: '/openapi.json' })).json<{ webhooks: Record<string, unknown> }>()
  assert.deepEqual(Object.keys(document.webhooks), [...RESOURCE_EVENT_TYPES, ...trayEvents, 'webhook.test'])
})

test('serving it refuses no subscriber: without events, a token gets the events it may read, fixed at ' +
  'creation', async (t) => {
  const cleanup = cleanupStack(t)
  const database = process.env.TEST_APP_STORE === 'postgres'
    ? scratchDatabaseUrl(cleanup).url
    : tempDatabaseFile(cleanup)
  const plantHooks = scopedToken('plant-hooks', ['webhooks', ...READ_SCOPES])
  const trayHooks = scopedToken('tray-hooks', ['webhooks', resourceScope(TRAYS, 'write')])
  const hooks = scopedToken('hooks', ['webhooks'])
  const trayEvents = eventTypesOf([TRAYS])
  const start = async (tokens: readonly ScopedToken[]) => await buildTestApp(cleanup, { DATABASE_URL: database },
    { resources: [...RESOURCES, TRAYS] }, (config) => ({
      ...config,
      namedTokens: tokens.map(({ name, scopes, token }) => ({ name, scopes, digest: tokenDigest(token) }))
    }))
  const before = await start([plantHooks, trayHooks, hooks])
  const bearer = ({ token }: ScopedToken) => ({ authorization: `Bearer ${token}` })
  const plantOnly = await createWebhook(before, { url: PUBLIC_RECEIVER }, bearer(plantHooks))
  assert.deepEqual(plantOnly.events, RESOURCE_EVENT_TYPES)
  assert.deepEqual((await createWebhook(before, { url: PUBLIC_RECEIVER }, bearer(trayHooks))).events, trayEvents)
  // Reading none of them, the token is refused as before: 403 naming the first resource's read scope.
  const first = resourceScope(RESOURCES[0], 'read')
  const refused = await before.inject({
    method: 'POST', url: '/webhooks', headers: bearer(hooks), payload: { url: PUBLIC_RECEIVER }
  })
  assert.equal(refused.statusCode, 403)
  assert.equal(refused.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="${first}"`)
  assert.deepEqual(refused.json(),
    { error: 403, message: `This token lacks the scope ${first}, which this operation needs` })
  await before.close()

  // Given the trays' scope since, the token's subscription keeps the list it was created with; a PATCH adds them.
  const after = await start([{ ...plantHooks, scopes: [...plantHooks.scopes, resourceScope(TRAYS, 'read')] }])
  const url = `/webhooks/${plantOnly.id}`
  const read = await after.inject({ url, headers: bearer(plantHooks) })
  const { secret: _secret, ...view } = plantOnly
  assert.deepEqual(read.json<WebhookBody>(), view)
  const events = [...RESOURCE_EVENT_TYPES, ...trayEvents]
  const widened = await after.inject({ method: 'PATCH', url, headers: bearer(plantHooks), payload: { events } })
  assert.equal(widened.statusCode, 200, widened.body)
  assert.deepEqual(widened.json<WebhookBody>().events, events)
})

test('its store operations are timed as every resource\'s are', async (t) => {
  const app = await buildTestApp(t, { METRICS_PORT: '0' }, { resources: [...RESOURCES, TRAYS] })
  const created = await app.inject({ method: 'POST', url: '/trays', headers: AUTH, payload: { name: 'Terracotta' } })
  assert.equal(created.statusCode, 201)
  const address = app.metrics?.address()
  assert.ok(address)
  const text = await (await fetch(`http://127.0.0.1:${address.port}/metrics`)).text()
  assert.match(text, /^plantstore_store_operation_duration_seconds_count\{operation="trays\.create",outcome="ok"\} 1$/m)
  assert.match(text, /^plantstore_store_operation_duration_seconds_count\{operation="trays\.list",outcome="ok"\} 0$/m)
})
