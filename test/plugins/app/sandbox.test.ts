import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { tenantDirectory } from '../../../src/sandbox/sqlite-tenants.js'
import { tokenDigest } from '../../../src/auth/tokens.js'
import { captureLog } from '../../helpers/app.js'
import { smallDisk } from '../../helpers/faults.js'
import { assertError, JSON_TYPE } from '../../helpers/plants.js'
import { until } from '../../helpers/webhook-receiver.js'
import { PUBLIC_RECEIVER } from '../../helpers/webhooks.js'
import {
  AUTH_A, AUTH_B, buildSandboxApp, existingSchemas, manualClock,
  sandboxDatabases
} from '../../helpers/sandbox.js'

const SEED_NAMES = ['Monstera', 'Snake plant', 'Fiddle-leaf fig', 'Pothos', 'Aloe vera']

const names = async (app: FastifyInstance, auth: Record<string, string>): Promise<string[]> => {
  const res = await app.inject({ url: '/plants?limit=100', headers: auth })
  assert.equal(res.statusCode, 200, res.body)
  return res.json<Array<{ name: string }>>().map((plant) => plant.name)
}

for (const database of sandboxDatabases) {
  describe(`sandbox on ${database.name}`, () => {
    test('any token of 16 to 256 URL-safe characters is a tenant; shorter, longer or other characters are 401 ' +
      'with WWW-Authenticate', async (t) => {
      const app = await buildSandboxApp(t, database)
      for (const token of ['a'.repeat(16), 'Z9._~-'.repeat(40).slice(0, 256)]) {
        const res = await app.inject({ url: '/plants/1', headers: { authorization: `Bearer ${token}` } })
        assert.equal(res.statusCode, 200, res.body)
      }
      for (const token of ['a'.repeat(15), 'a'.repeat(257), 'abcdefghijklmnop+', 'abcdefghijklmnop/',
        'abcdefghijklmnop=']) {
        const res = await app.inject({ url: '/plants', headers: { authorization: `Bearer ${token}` } })
        assert.equal(res.statusCode, 401, token)
        assert.equal(res.headers['www-authenticate'], 'Bearer')
        assert.equal(res.json<{ error: number }>().error, 401)
      }
      const none = await app.inject({ url: '/plants' })
      assert.equal(none.statusCode, 401)
      assert.equal(none.headers['www-authenticate'], 'Bearer')
    })

    test('a new tenant starts with the built-in example plants, ids from 1; each tenant has its own', async (t) => {
      const app = await buildSandboxApp(t, database)
      const res = await app.inject({ url: '/plants/1', headers: AUTH_A })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['content-type'], JSON_TYPE)
      assert.deepEqual({ ...res.json<Record<string, unknown>>(), createdAt: '', updatedAt: '' }, {
        id: 1,
        name: 'Monstera',
        tag: 'tropical',
        createdAt: '',
        updatedAt: ''
      })
      assert.deepEqual(await names(app, AUTH_A), SEED_NAMES)
      const created = await app.inject({
        method: 'POST',
        url: '/plants',
        headers: AUTH_A,
        payload: { name: 'Only in A' }
      })
      assert.equal(created.statusCode, 201)
      assert.equal(created.json<{ id: number }>().id, 6)
      assert.deepEqual(await names(app, AUTH_B), SEED_NAMES)
      const inB = await app.inject({ method: 'POST', url: '/plants', headers: AUTH_B, payload: { name: 'Only in B' } })
      assert.equal(inB.json<{ id: number }>().id, 6)
      assert.deepEqual(await names(app, AUTH_A), [...SEED_NAMES, 'Only in A'])
    })

    test('isolation: every plant operation of one tenant leaves the other untouched, and the ' +
      'other\'s plants are 404', async (t) => {
      const app = await buildSandboxApp(t, database, { SANDBOX_SEED: 'none' })
      const a = await app.inject({
        method: 'POST',
        url: '/plants',
        headers: AUTH_A,
        payload: { id: 42, name: 'A plant' }
      })
      assert.equal(a.statusCode, 201)
      for (const [method, payload] of [['GET'], ['PUT', { name: 'x' }], ['PATCH', { name: 'x' }],
        ['DELETE']] as const) {
        const res = await app.inject({
          method,
          url: '/plants/42',
          headers: AUTH_B,
          ...(payload === undefined ? {} : { payload })
        })
        assert.equal(res.statusCode, 404, `${method}: ${res.body}`)
        assert.deepEqual(res.json(), { error: 404, message: 'Plant 42 not found' })
      }
      assert.deepEqual(await names(app, AUTH_B), [])
      // B may take the same id: ids are per tenant.
      assert.equal(
        (await app.inject(
          { method: 'POST', url: '/plants', headers: AUTH_B, payload: { id: 42, name: 'B plant' } })).statusCode, 201)
      assert.equal((await app.inject({ method: 'DELETE', url: '/plants/42', headers: AUTH_B })).statusCode, 204)
      assert.deepEqual((await app.inject({ url: '/plants/42', headers: AUTH_A })).json<{ name: string }>().name,
        'A plant')
    })

    test('isolation of idempotency keys: the same key in two tenants makes two plants', async (t) => {
      const app = await buildSandboxApp(t, database, { SANDBOX_SEED: 'none' })
      const create = async (auth: Record<string, string>, name: string) =>
        await app.inject({
          method: 'POST',
          url: '/plants',
          headers: { ...auth, 'idempotency-key': 'same-key' },
          payload: { name }
        })
      const a = await create(AUTH_A, 'A')
      const b = await create(AUTH_B, 'B')
      assert.deepEqual([a.statusCode, b.statusCode], [201, 201])
      assert.equal(b.headers['idempotent-replayed'], undefined)
      assert.deepEqual([a.json<{ name: string }>().name, b.json<{ name: string }>().name], ['A', 'B'])
      const again = await create(AUTH_A, 'A')
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, a.body)
      // The same key with another body is the reuse error in A, still a fresh create in neither.
      assert.equal((await create(AUTH_A, 'other')).statusCode, 422)
    })

    test('isolation of webhook subscriptions: another tenant\'s are 404 and never listed', async (t) => {
      const app = await buildSandboxApp(t, database)
      const created = await app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: AUTH_A,
        payload: { url: PUBLIC_RECEIVER }
      })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.headers.location, '/webhooks/1')
      for (const [method, url, payload] of [
        ['GET', '/webhooks/1'], ['GET', '/webhooks/1/secret'], ['PATCH', '/webhooks/1', { description: 'x' }],
        ['DELETE', '/webhooks/1'],
        ['POST', '/webhooks/1/rotate-secret'], ['GET', '/webhooks/1/deliveries'], ['POST', '/webhooks/1/test']
      ] as const) {
        const res = await app.inject({ method, url, headers: AUTH_B, ...(payload !== undefined && { payload }) })
        assert.equal(res.statusCode, 404, `${method} ${url}: ${res.body}`)
      }
      assert.deepEqual((await app.inject({ url: '/webhooks', headers: AUTH_B })).json(), [])
      const inB = await app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: AUTH_B,
        payload: { url: PUBLIC_RECEIVER }
      })
      assert.equal(inB.headers.location, '/webhooks/1')
      assert.equal((await app.inject({ url: '/webhooks', headers: AUTH_A })).json<unknown[]>().length, 1)
    })

    test('quotas: SANDBOX_MAX_PLANTS and SANDBOX_MAX_SUBSCRIPTIONS per tenant, then ' +
      '409 in the Error shape', async (t) => {
      const app = await buildSandboxApp(t, database, { SANDBOX_MAX_PLANTS: '7', SANDBOX_MAX_SUBSCRIPTIONS: '2' })
      const results = await Promise.all(
        [1, 2, 3, 4].map(
          async (i) => await app.inject({
            method: 'POST',
            url: '/plants',
            headers: AUTH_A,
            payload: { name: `p${i}` }
          })))
      assert.deepEqual(results.map((res) => res.statusCode).sort(), [201, 201, 409, 409])
      const refused = results.find((res) => res.statusCode === 409)
      assert.equal(refused?.headers['content-type'], JSON_TYPE)
      assert.deepEqual(refused?.json(), {
        error: 409,
        message: 'This sandbox token already has 7 plants, the most allowed: delete one first'
      })
      // Another tenant is not counted against; a delete makes room.
      assert.equal(
        (await app.inject({ method: 'POST', url: '/plants', headers: AUTH_B, payload: { name: 'b' } })).statusCode, 201)
      assert.equal((await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH_A })).statusCode, 204)
      assert.equal(
        (await app.inject({ method: 'POST', url: '/plants', headers: AUTH_A, payload: { name: 'again' } })).statusCode,
        201)
      // At the cap again: a keyed create that landed (its answer lost, say) is replayed; a new key is refused.
      assert.equal((await app.inject({ method: 'DELETE', url: '/plants/2', headers: AUTH_A })).statusCode, 204)
      const keyed = { ...AUTH_A, 'idempotency-key': 'k' }
      const landed = await app.inject({ method: 'POST', url: '/plants', headers: keyed, payload: { name: 'last' } })
      assert.equal(landed.statusCode, 201)
      const replayed = await app.inject({ method: 'POST', url: '/plants', headers: keyed, payload: { name: 'last' } })
      assert.equal(replayed.statusCode, 201, replayed.body)
      assert.equal(replayed.headers['idempotent-replayed'], 'true')
      assert.deepEqual(replayed.json(), landed.json())
      const another = await app.inject({
        method: 'POST',
        url: '/plants',
        headers: { ...AUTH_A, 'idempotency-key': 'k2' },
        payload: { name: 'more' }
      })
      assert.deepEqual(another.json(), {
        error: 409,
        message: 'This sandbox token already has 7 plants, the most allowed: delete one first'
      })
      for (const expected of [201, 201, 409]) {
        const res = await app.inject({
          method: 'POST',
          url: '/webhooks',
          headers: AUTH_A,
          payload: { url: PUBLIC_RECEIVER }
        })
        assert.equal(res.statusCode, expected, res.body)
      }
      assert.equal(
        (await app.inject(
          { method: 'POST', url: '/webhooks', headers: AUTH_B, payload: { url: PUBLIC_RECEIVER } })).statusCode, 201)
    })
  })
}

const keyOf = (auth: { authorization: string }): string => tokenDigest(auth.authorization.slice('Bearer '.length))

/** Whether the tenant's data exists: its file (SQLite) or its schema (PostgreSQL). */
async function tenantDataExists (app: FastifyInstance, auth: { authorization: string }): Promise<boolean> {
  const url = app.config.databaseUrl
  if (url.startsWith('postgres')) {
    // Loaded only on PostgreSQL, as the app loads it: without TEST_DATABASE_URL it is not measured.
    const { tenantSchema } = await import('../../../src/sandbox/postgres-tenants.js')
    const schema = tenantSchema(new URL(url).searchParams.get('schema') ?? undefined, keyOf(auth))
    return (await existingSchemas([schema])).length === 1
  }
  return existsSync(join(tenantDirectory(url), `${keyOf(auth)}.db`))
}

const registryOf = (app: FastifyInstance) => {
  const registry = app.sandbox?.registry
  assert.ok(registry !== undefined)
  return registry
}

for (const database of sandboxDatabases) {
  describe(`sandbox lifecycle on ${database.name}`, () => {
    test('a tenant idle for SANDBOX_TTL_MS is deleted by the sweep with all its data; the ' +
      'token then starts afresh', async (t) => {
      const clock = manualClock()
      const app = await buildSandboxApp(t, database, { SANDBOX_TTL_MS: '60000' }, { sandboxNow: clock.now })
      assert.equal((await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH_A })).statusCode, 204)
      assert.equal(
        (await app.inject(
          { method: 'POST', url: '/webhooks', headers: AUTH_A, payload: { url: PUBLIC_RECEIVER } })).statusCode, 201)
      assert.equal((await app.inject({ url: '/plants/1', headers: AUTH_B })).statusCode, 200)
      assert.equal(await tenantDataExists(app, AUTH_A), true)
      const registry = registryOf(app)
      clock.advance(30_000)
      await registry.sweep()
      assert.equal(await registry.count(), 2, 'not yet expired')
      // B is used meanwhile: only A expires.
      assert.equal((await app.inject({ url: '/plants/2', headers: AUTH_B })).statusCode, 200)
      clock.advance(30_001)
      await registry.sweep()
      assert.equal(await registry.count(), 1)
      assert.equal(await tenantDataExists(app, AUTH_A), false)
      assert.equal(await tenantDataExists(app, AUTH_B), true)
      assert.deepEqual(await names(app, AUTH_A), SEED_NAMES)
      assert.deepEqual((await app.inject({ url: '/webhooks', headers: AUTH_A })).json(), [])
    })

    test('at SANDBOX_MAX_TENANTS a new tenant replaces the least recently used idle one; with every tenant in use it ' +
      'is 503 with Retry-After', async (t) => {
      const clock = manualClock()
      const log = captureLog()
      const app = await buildSandboxApp(t, database,
        { SANDBOX_MAX_TENANTS: '2', SANDBOX_TTL_MS: '3600000', LOG_LEVEL: 'debug' },
        { sandboxNow: clock.now, logStream: log.stream })
      const registry = registryOf(app)
      assert.equal((await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH_A })).statusCode, 204)
      clock.advance(1000)
      assert.equal((await app.inject({ method: 'DELETE', url: '/plants/2', headers: AUTH_B })).statusCode, 204)
      // A tenant is evicted only once unused for a minute (a quarter of the TTL when shorter).
      clock.advance(61_000)
      const C = { authorization: 'Bearer sandbox-visitor-c-0123456789' }
      assert.equal((await app.inject({ url: '/plants/1', headers: C })).statusCode, 200)
      assert.equal(await registry.count(), 2)
      assert.equal(await tenantDataExists(app, AUTH_A), false)
      assert.equal((await app.inject({ url: '/plants/2', headers: AUTH_B })).statusCode, 404, 'B kept its data')
      const held = [await registry.acquire(keyOf(AUTH_B)), await registry.acquire(keyOf(C))]
      clock.advance(61_000)
      const refused = await app.inject({ url: '/plants', headers: AUTH_A })
      assert.equal(refused.statusCode, 503)
      assert.equal(refused.headers['retry-after'], '60')
      assert.deepEqual(refused.json(), {
        error: 503,
        message: 'The sandbox holds as many tenants as it may and all are in use: retry later'
      })
      // Expected back-pressure, not a failure: logged at debug, never as an error with a stack.
      const refusals = log.text().split('\n').filter((line) => line.includes('retry later')).map(
        (line) => JSON.parse(line) as { level: number, msg: string })
      assert.deepEqual(refusals.map(({ level, msg }) => [level, msg]), [[20, 'request refused']])
      for (const lease of held) lease.release()
      assert.equal((await app.inject({ url: '/plants', headers: AUTH_A })).statusCode, 200)
      assert.equal(await registry.count(), 2)
    })

    test('a tenant used within the last minute is never evicted: a burst of new tokens gets 503 ' +
      '+ Retry-After instead', async (t) => {
      const clock = manualClock()
      const app = await buildSandboxApp(t, database, { SANDBOX_MAX_TENANTS: '2', SANDBOX_TTL_MS: '3600000' },
        { sandboxNow: clock.now })
      assert.equal((await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH_B })).statusCode, 204)
      // A is read every 200 ms while newcomers arrive; B was used at the start, within the minute too.
      for (let i = 0; i < 20; i++) {
        clock.advance(200)
        assert.equal((await app.inject({ url: '/plants/2', headers: AUTH_A })).statusCode, 200, `A's read ${i}`)
        const newcomer = await app.inject({
          url: '/plants',
          headers: { authorization: `Bearer sandbox-newcomer-${i}-0123456789` }
        })
        assert.equal(newcomer.statusCode, 503, newcomer.body)
        assert.equal(newcomer.headers['retry-after'], '60')
      }
      assert.equal(await tenantDataExists(app, AUTH_B), true)
      // A minute after B's last use (A still read meanwhile), B is the one a newcomer replaces.
      clock.advance(56_000)
      assert.equal((await app.inject({ url: '/plants/2', headers: AUTH_A })).statusCode, 200)
      clock.advance(1000)
      assert.equal(
        (await app.inject(
          { url: '/plants/1', headers: { authorization: 'Bearer sandbox-newcomer-x-0123456789' } })).statusCode, 200)
      assert.equal(await tenantDataExists(app, AUTH_B), false)
      assert.deepEqual(await names(app, AUTH_A), SEED_NAMES)
    })

    test('open stores are capped by SANDBOX_OPEN_TENANTS; a closed tenant keeps its data', async (t) => {
      const app = await buildSandboxApp(t, database, { SANDBOX_OPEN_TENANTS: '2', SANDBOX_SEED: 'none' })
      const registry = registryOf(app)
      const tokens = [0, 1, 2, 3].map((i) => ({ authorization: `Bearer sandbox-visitor-${i}-0123456789` }))
      for (const auth of tokens) {
        assert.equal(
          (await app.inject(
            { method: 'POST', url: '/plants', headers: auth, payload: { name: auth.authorization } })).statusCode, 201)
        assert.ok(registry.openCount <= 2, `${registry.openCount} open`)
      }
      for (const auth of tokens) assert.deepEqual(await names(app, auth), [auth.authorization])
      assert.ok(registry.openCount <= 2)
      assert.equal(await registry.count(), 4)
    })

    test('with every open store in use, a request of another tenant waits until one is free', async (t) => {
      const app = await buildSandboxApp(t, database, { SANDBOX_OPEN_TENANTS: '1' })
      const registry = registryOf(app)
      const held = await registry.acquire(keyOf(AUTH_A))
      let answered = false
      const waiting = app.inject({ url: '/plants/1', headers: AUTH_B }).then((res) => { answered = true; return res })
      // B's store cannot open while A's is held: B's request is still pending after A's tenant served others.
      assert.equal((await app.inject({ url: '/plants/2', headers: AUTH_A })).statusCode, 200)
      assert.equal(answered, false)
      assert.equal(registry.openCount, 1)
      held.release()
      assert.equal((await waiting).statusCode, 200)
      assert.equal(registry.openCount, 1)
    })

    test('a client gone while its tenant waited to open does not keep the tenant\'s store', async (t) => {
      const app = await buildSandboxApp(t, database, { SANDBOX_OPEN_TENANTS: '1' })
      const registry = registryOf(app)
      const address = await app.listen({ host: '127.0.0.1', port: 0 })
      const held = await registry.acquire(keyOf(AUTH_A))
      const gone = request(`${address}/plants/1`, { headers: AUTH_B, agent: false })
      gone.on('error', () => {})
      gone.end()
      await until('B waits for a store', () => registry.waiting === 1)
      gone.destroy()
      await until('the server saw B go',
        async () => await new Promise<boolean>(
          (resolve) => { app.server.getConnections((_err, count) => { resolve(count === 0) }) }))
      held.release()
      // C needs B's store closed: a B store kept by the gone request would make C wait, then 503.
      const C = { authorization: 'Bearer sandbox-visitor-c-0123456789' }
      assert.equal((await app.inject({ url: '/plants/1', headers: C })).statusCode, 200)
    })

    test('SANDBOX_SEED names a JSON file of plants', async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'plant-store-seed-'))
      t.after(() => { rmSync(dir, { recursive: true, force: true }) })
      const file = join(dir, 'seed.json')
      writeFileSync(file, JSON.stringify([{ name: 'Cactus', tag: 'desert' }, { name: ' Fern ' }]))
      const app = await buildSandboxApp(t, database, { SANDBOX_SEED: file })
      const res = await app.inject({ url: '/plants', headers: AUTH_A })
      assert.deepEqual(res.json<Array<Record<string, unknown>>>().map(({ id, name, tag }) => ({ id, name, tag })),
        [{ id: 1, name: 'Cactus', tag: 'desert' }, { id: 2, name: 'Fern', tag: undefined }])
    })
  })
}

test('a full disk in a SQLite sandbox: a new tenant is 507, /health 503, and both ' +
  'recover when space is back', async (t) => {
  const disk = smallDisk(t, 2 * 1024 * 1024)
  if (disk === undefined) {
    t.skip('mounting a tmpfs needs root')
    return
  }
  const [sqlite] = sandboxDatabases
  assert.ok(sqlite !== undefined)
  const app = await buildSandboxApp(t, { ...sqlite, url: () => join(disk.dir, 'sandbox.db') })
  assert.equal((await app.inject({ url: '/plants/1', headers: AUTH_A })).statusCode, 200)
  disk.fill(16 * 1024)
  assertError(await app.inject({ url: '/plants', headers: AUTH_B }), 507,
    'The database storage is full; nothing was written')
  const health = await app.inject({ url: '/health' })
  assertError(health, 503, 'The database storage is full')
  assert.equal(health.headers['retry-after'], '5')
  assert.equal((await app.inject({ url: '/health/ready' })).statusCode, 503)
  assert.equal((await app.inject({ url: '/plants/1', headers: AUTH_A })).statusCode, 200,
    'an existing tenant is still read')
  assert.equal(await tenantDataExists(app, AUTH_B), false, 'no half-made tenant is left')

  disk.free()
  assert.deepEqual((await app.inject({ url: '/health' })).json(), { status: 'ok', mode: 'sandbox' })
  assert.equal((await app.inject({ url: '/health/ready' })).statusCode, 200)
  assert.deepEqual(await names(app, AUTH_B), SEED_NAMES)
})
