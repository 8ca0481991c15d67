import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { AUTH, buildTestApp } from '../helpers/app.js'
import { testDatabases } from '../helpers/databases.js'

// The API answers the same on every store: run the behaviours that touch the database on each.
for (const database of testDatabases) {
  describe(`API on ${database.name}`, () => {
    test('GET /health answers 200', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const res = await app.inject({ method: 'GET', url: '/health' })
      assert.equal(res.statusCode, 200)
      assert.deepEqual(res.json(), { status: 'ok' })
    })

    test('DELETE matches ids exactly: beyond 2^53 and int64 max', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      await app.store.create({ id: 9007199254740992n, name: 'two to the 53' })
      await app.store.create({ id: 9007199254740993n, name: 'one more' })
      await app.store.create({ id: 9223372036854775807n, name: 'int64 max' })
      assert.equal((await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: AUTH })).statusCode, 204)
      assert.equal(await app.store.get(9007199254740993n), undefined)
      assert.equal((await app.store.get(9007199254740992n))?.name, 'two to the 53')
      assert.equal((await app.inject({ method: 'DELETE', url: '/plants/9223372036854775807', headers: AUTH })).statusCode, 204)
      const again = await app.inject({ method: 'DELETE', url: '/plants/9223372036854775807', headers: AUTH })
      assert.equal(again.statusCode, 404)
      assert.deepEqual(again.json(), { error: 404, message: 'Plant 9223372036854775807 not found' })
    })

    test('concurrent deletes of one plant give exactly one 204; the rest are 404', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const { plant } = await app.store.create({ name: 'Contested' })
      const responses = await Promise.all(Array.from({ length: 30 }, () =>
        app.inject({ method: 'DELETE', url: `/plants/${plant.id}`, headers: AUTH })))
      const statuses = responses.map((res) => res.statusCode)
      assert.equal(statuses.filter((status) => status === 204).length, 1)
      assert.equal(statuses.filter((status) => status === 404).length, 29)
    })
  })
}
