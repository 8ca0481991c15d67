import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { Validator } from '@seriousme/openapi-schema-validator'
import { RESOURCES } from '../../../src/resources/index.js'
import { defineResource } from '../../../src/resources/fields.js'
import { PLANT_FIELDS, PLANTS } from '../../../src/resources/plants.js'
import { resourceScope } from '../../../src/auth/scopes.js'
import { tokenDigest } from '../../../src/auth/tokens.js'
import { AUTH, buildTestApp } from '../../helpers/app.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { apiTestDatabases } from '../../helpers/databases.js'
import { AUTH_A, buildSandboxApp, sandboxDatabases } from '../../helpers/sandbox.js'
import { assertError } from '../../helpers/plants.js'
import { grantingScopes, RESOURCE_EVENT_TYPES, resourceOperations } from '../../helpers/resources.js'
import { scopedToken } from '../../helpers/scoped-tokens.js'
import {
  buildWebhooksApp, createWebhook, deliveriesWhen, PUBLIC_RECEIVER, type DeliveryBody
} from '../../helpers/webhooks.js'

/**
 * buildApp serves the resources it is given: routes, scopes, the auth check, plain tokens' scopes,
 * shared schemas, the document and the store (each tenant's in a sandbox) follow the list, not the module's
 * RESOURCES. The resource here is declared in this file alone: the plants' declaration under other names,
 * in a table of its own.
 */

const POTS = defineResource({
  collection: 'pots',
  name: 'pot',
  title: 'Pot',
  fields: PLANT_FIELDS,
  bodies: {
    create: 'A pot to create',
    replace: { description: 'A full replacement of a pot', example: { name: 'Terracotta' } },
    patch: { description: 'A JSON merge patch of a pot', example: { tag: null } }
  },
  texts: { ...PLANTS.texts, tag: 'The pots resource', scopes: { read: 'List and get pots', write: 'Change pots' } }
})

interface Operation { operationId: string, 'x-scopes'?: string[], tags?: string[] }
interface Document {
  paths: Record<string, Record<string, Operation>>
  tags: Array<{ name: string, description: string }>
  components: { schemas: Record<string, unknown>, securitySchemes: { bearerAuth: { description: string } } }
}

test('an app given another resource documents it: its paths, operations, scopes, tag and schemas', async (t) => {
  const app = await buildTestApp(t, {}, { resources: [...RESOURCES, POTS] })
  const res = await app.inject({ url: '/openapi.json' })
  assert.equal(res.statusCode, 200)
  const document = res.json<Document>()
  assert.equal((await new Validator().validate(res.json())).valid, true)
  for (const { path, method, operationId, access } of resourceOperations(POTS)) {
    const operation = document.paths[path]?.[method]
    assert.equal(operation?.operationId, operationId, `${method} ${path}`)
    assert.deepEqual(operation['x-scopes'], grantingScopes(POTS, access), operationId)
    assert.deepEqual(operation.tags, ['pots'], operationId)
  }
  assert.deepEqual(document.tags.map(({ name }) => name), [...RESOURCES.map(({ collection }) => collection), 'pots', 'webhooks', 'service'])
  for (const name of ['Pot', 'PotList', 'NewPot', 'PotUpdate', 'PotPatch']) assert.ok(name in document.components.schemas, name)
  assert.match(document.components.securitySchemes.bearerAuth.description,
    /`pots:read` \(list and get pots\), `pots:write` \(change pots; includes `pots:read`\), `webhooks`/)
  // The default app is unchanged by it.
  const plain = (await (await buildTestApp(t)).inject({ url: '/openapi.json' })).json<Document>()
  assert.equal(plain.paths['/pots'], undefined)
})

test('its scopes are checked, named tokens may hold them, and a plain token holds them all', async (t) => {
  const reader = scopedToken('reader', [resourceScope(POTS, 'read')])
  const hooks = scopedToken('hooks', ['webhooks'])
  const app = await buildTestApp(t, {}, { resources: [...RESOURCES, POTS] }, (config) => ({
    ...config,
    namedTokens: [reader, hooks].map(({ name, scopes, token }) => ({ name, scopes, digest: tokenDigest(token) }))
  }))
  const refused = (needed: string) => ({
    status: 403,
    challenge: `Bearer error="insufficient_scope", scope="${needed}"`,
    body: { error: 403, message: `This token lacks the scope ${needed}, which this operation needs` }
  })
  const cases = [
    { token: hooks.token, method: 'GET', url: '/pots', expected: refused('pots:read') },
    { token: reader.token, method: 'POST', url: '/pots', expected: refused('pots:write') },
    { token: reader.token, method: 'DELETE', url: '/pots/1', expected: refused('pots:write') }
  ] as const
  for (const { token, method, url, expected } of cases) {
    const headers = { authorization: `Bearer ${token}` }
    const answer = await app.inject(method === 'POST' ? { method, url, headers, payload: {} } : { method, url, headers })
    assert.equal(answer.statusCode, expected.status, `${method} ${url}`)
    assert.equal(answer.headers['www-authenticate'], expected.challenge)
    assert.deepEqual(answer.json(), expected.body)
  }
  // Past the scope check, validation answers: the reader may read, the plain token may write.
  const badId = { error: 400, message: 'params/id must match format "int64"' }
  assert.deepEqual((await app.inject({ url: '/pots/x', headers: { authorization: `Bearer ${reader.token}` } })).json(), badId)
  assert.deepEqual((await app.inject({ method: 'DELETE', url: '/pots/x', headers: AUTH })).json(), badId)
  assert.deepEqual((await app.inject({ method: 'POST', url: '/pots', headers: AUTH, payload: {} })).json(),
    { error: 400, message: "body must have property 'name'" })
})

/** Both resources stored, each in its own table: ids drawn apart, each read back from where it was written. */
async function storesBoth (app: FastifyInstance, headers: Record<string, string>): Promise<void> {
  const create = async (url: string, name: string) =>
    await app.inject({ method: 'POST', url, headers, payload: { name } })
  const pot = await create('/pots', 'Terracotta')
  assert.equal(pot.statusCode, 201, pot.body)
  assert.equal(pot.headers.location, '/pots/1')
  const plant = await create('/plants', 'Monstera')
  assert.equal(plant.statusCode, 201, plant.body)
  assert.equal(plant.headers.location, '/plants/1')
  const read = await app.inject({ url: '/pots/1', headers })
  assert.equal(read.statusCode, 200)
  assert.deepEqual(read.json(), pot.json())
  assert.equal(read.headers.etag, pot.headers.etag)
  assert.deepEqual((await app.inject({ url: '/pots', headers })).json(), [pot.json()])
  assert.equal((await app.inject({ url: '/plants/1', headers })).json<{ name: string }>().name, 'Monstera')
}

for (const database of apiTestDatabases) {
  test(`${database.name}: the app's store serves the resource it is given`, async (t) => {
    const app = await buildTestApp(t, database.env(t), { resources: [...RESOURCES, POTS] })
    await storesBoth(app, AUTH)
  })
}

for (const database of sandboxDatabases) {
  test(`${database.name}, SANDBOX=1: each tenant's store serves the resource the app is given`, async (t) => {
    const app = await buildSandboxApp(t, database, { SANDBOX_SEED: 'none' }, { resources: [...RESOURCES, POTS] })
    await storesBoth(app, AUTH_A)
  })
}

for (const database of sandboxDatabases) {
  test(`${database.name}, SANDBOX=1: a tenant made before the resource was served gets its table`, async (t) => {
    const url = database.url(cleanupStack(t))
    const same = { name: database.name, url: () => url }
    const before = await buildSandboxApp(t, same, { SANDBOX_SEED: 'none' })
    assert.equal((await before.inject({ method: 'POST', url: '/plants', headers: AUTH_A, payload: { name: 'Fern' } })).statusCode, 201)
    await before.close()
    const after = await buildSandboxApp(t, same, { SANDBOX_SEED: 'none' }, { resources: [...RESOURCES, POTS] })
    const pot = await after.inject({ method: 'POST', url: '/pots', headers: AUTH_A, payload: { name: 'Terracotta' } })
    assert.equal(pot.statusCode, 201, pot.body)
    assert.deepEqual((await after.inject({ url: '/plants', headers: AUTH_A })).json<Array<{ name: string }>>().map(({ name }) => name), ['Fern'])
  })
}

test('its events are subscribable: validated, defaulted, delivered, filtered, listed and documented', async (t) => {
  const app = await buildWebhooksApp(t, {}, { resources: [...RESOURCES, POTS] })
  const potEvents = ['pot.created', 'pot.updated', 'pot.deleted']
  assert.deepEqual((await createWebhook(app)).events, [...RESOURCE_EVENT_TYPES, ...potEvents])
  const subscription = await createWebhook(app, { url: PUBLIC_RECEIVER, events: ['pot.deleted', 'pot.created'] })
  assert.deepEqual(subscription.events, ['pot.created', 'pot.deleted'])
  assert.deepEqual((await app.inject({ url: `/webhooks/${subscription.id}`, headers: AUTH })).json<{ events: string[] }>().events,
    ['pot.created', 'pot.deleted'])
  const known = [...RESOURCE_EVENT_TYPES, ...potEvents].map((type) => `"${type}"`).join(', ')
  assertError(await app.inject({ method: 'POST', url: '/webhooks', headers: AUTH, payload: { url: PUBLIC_RECEIVER, events: ['pot.moved'] } }),
    400, `body/events/0 must be one of ${known}`)
  assert.equal((await app.inject({ method: 'POST', url: '/pots', headers: AUTH, payload: { name: 'Terracotta' } })).statusCode, 201)
  const [delivery] = await deliveriesWhen(app, subscription.id, (deliveries) => deliveries.length === 1)
  assert.equal(delivery?.eventType, 'pot.created')
  const filtered = await app.inject({ url: `/webhooks/${subscription.id}/deliveries?eventType=pot.created`, headers: AUTH })
  assert.equal(filtered.statusCode, 200, filtered.body)
  assert.deepEqual(filtered.json<DeliveryBody[]>().map(({ id }) => id), [delivery?.id])
  const catalog = (await app.inject({ url: '/webhooks/event-types', headers: AUTH })).json<Array<{ type: string }>>()
  assert.deepEqual(catalog.map(({ type }) => type), [...RESOURCE_EVENT_TYPES, ...potEvents, 'webhook.test'])
  const document = (await app.inject({ url: '/openapi.json' })).json<{ webhooks: Record<string, unknown> }>()
  assert.deepEqual(Object.keys(document.webhooks), [...RESOURCE_EVENT_TYPES, ...potEvents, 'webhook.test'])
})
