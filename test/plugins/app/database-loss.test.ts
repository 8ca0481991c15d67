import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import { AUTH, buildTestApp } from '../../helpers/app.js'
import {
  scratchDatabaseUrl, terminateSessions, TEST_DATABASE_URL,
  withApplicationName
} from '../../helpers/postgres.js'
import { startTcpProxy } from '../../helpers/tcp-proxy.js'

const JSON_TYPE = 'application/json; charset=utf-8'

// Losing PostgreSQL is a 503 in the Error shape, never a crash, and the service recovers by itself.
if (TEST_DATABASE_URL !== undefined) {
  const serverPort = Number(new URL(TEST_DATABASE_URL).port || 5432)

  describe('when PostgreSQL goes away', () => {
    test('/health and the routes answer 503, then recover when it returns', async (t) => {
      const proxy = await startTcpProxy(serverPort)
      t.after(() => proxy.close())
      const url = new URL(scratchDatabaseUrl(t).url)
      url.port = String(proxy.port)
      const app = await buildTestApp(t, { DATABASE_URL: url.toString(), PG_CONNECT_TIMEOUT_MS: '2000' })
      const { item: plant } = await app.store.plants.create({ name: 'survivor' })
      const { item: doomed } = await app.store.plants.create({ name: 'doomed' })

      await proxy.down()
      const health = await app.inject({ method: 'GET', url: '/health' })
      assert.equal(health.statusCode, 503)
      assert.equal(health.headers['content-type'], JSON_TYPE)
      assert.deepEqual(health.json(), { error: 503, message: 'The database does not answer' })
      const remove = await app.inject({ method: 'DELETE', url: `/plants/${doomed.id}`, headers: AUTH })
      assert.equal(remove.statusCode, 503)
      assert.equal(remove.headers['content-type'], JSON_TYPE)
      assert.deepEqual(remove.json(), { error: 503, message: 'The database is unavailable, retry shortly' })

      await proxy.up()
      assert.deepEqual((await app.inject({ method: 'GET', url: '/health' })).json(), { status: 'ok' })
      assert.equal((await app.inject({ method: 'DELETE', url: `/plants/${doomed.id}`, headers: AUTH })).statusCode, 204)
      assert.deepEqual(await app.store.plants.get(plant.id), plant)
    })

    test('terminated sessions: each answer is a success or a 503, and the next ones succeed', async (t) => {
      const name = `plant-store-test-${randomBytes(6).toString('hex')}`
      const app = await buildTestApp(t, { DATABASE_URL: withApplicationName(scratchDatabaseUrl(t).url, name) })
      const plants = await Promise.all(
        Array.from({ length: 3 }, async (_, i) => (await app.store.plants.create({ name: `p${i}` })).item))

      assert.ok(await terminateSessions(name) >= 1)
      const answers = await Promise.all([
        app.inject({ method: 'GET', url: '/health' }),
        ...plants.map(
          async (plant) => await app.inject({ method: 'DELETE', url: `/plants/${plant.id}`, headers: AUTH }))
      ])
      for (const res of answers) {
        assert.ok([200, 204, 503].includes(res.statusCode), `status ${res.statusCode}`)
        if (res.statusCode === 503) {
          assert.equal(res.headers['content-type'], JSON_TYPE)
          assert.deepEqual(Object.keys(res.json()), ['error', 'message'])
        }
      }

      assert.deepEqual((await app.inject({ method: 'GET', url: '/health' })).json(), { status: 'ok' })
      for (const plant of plants) {
        const expected = answers[plants.indexOf(plant) + 1]?.statusCode === 204 ? 404 : 204
        assert.equal((await app.inject({ method: 'DELETE', url: `/plants/${plant.id}`, headers: AUTH })).statusCode,
          expected)
      }
    })
  })
}
