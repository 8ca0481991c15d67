import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { AUTH, buildTestApp } from '../../../helpers/app.js'
import { tempDatabaseFile, type Cleanup } from '../../../helpers/cleanup.js'
import { apiTestDatabases } from '../../../helpers/databases.js'
import { setIdSequence } from '../../../helpers/id-sequence.js'
import { assertError, createPlant, type PlantBody } from '../../../helpers/plants.js'

const MAX_SAFE = Number.MAX_SAFE_INTEGER

/** The database's environment; SQLite in a file, so the test can set its id sequence beside the app. */
function databaseEnv (database: (typeof apiTestDatabases)[number], t: Cleanup): NodeJS.ProcessEnv {
  if (database.name !== 'SQLite') return database.env(t)
  return { DATABASE_URL: tempDatabaseFile(t, 'plant-store-ids-'), SQLITE_SYNCHRONOUS: 'normal' }
}

// Every id the server assigns is one a JavaScript client holds exactly, whatever ids clients chose.
for (const database of apiTestDatabases) {
  describe(`server-assigned ids on ${database.name}`, () => {
    test('after a client creates 2^53 - 1, the ids the server assigns stay within 1..2^53 - 1', async (t) => {
      const app = await buildTestApp(t, databaseEnv(database, t))
      const chosen = await app.inject({
        method: 'POST',
        url: '/plants',
        headers: AUTH,
        payload: { id: MAX_SAFE, name: 'the top' }
      })
      assert.equal(chosen.statusCode, 201)
      assert.equal(chosen.headers.location, `/plants/${MAX_SAFE}`)
      const ids: number[] = []
      for (let i = 0; i < 3; i++) {
        const res = await app.inject({
          method: 'POST',
          url: '/plants',
          headers: AUTH,
          payload: { name: `generated ${i}` }
        })
        assert.equal(res.statusCode, 201)
        assert.equal(res.headers.location, `/plants/${i + 1}`)
        assert.match(res.body, new RegExp(`^\\{"id":${i + 1},"name":"generated ${i}",`))
        ids.push(res.json<PlantBody>().id)
      }
      assert.deepEqual(ids, [1, 2, 3])
      assert.deepEqual(
        (await app.inject({ url: '/plants', headers: AUTH })).json<PlantBody[]>().map((plant) => plant.id),
        [1, 2, 3, MAX_SAFE])
    })

    test('with every id up to 2^53 - 1 used, a create without an id is a 507; a chosen id still works', async (t) => {
      const env = databaseEnv(database, t)
      const app = await buildTestApp(t, env)
      await createPlant(app, { id: MAX_SAFE, name: 'the top' })
      await setIdSequence(String(env.DATABASE_URL), BigInt(MAX_SAFE) - 2n)
      assert.equal((await createPlant(app, { name: 'the last one' })).plant.id, MAX_SAFE - 1)

      const refused = await app.inject({
        method: 'POST',
        url: '/plants',
        headers: { ...AUTH, 'idempotency-key': 'k1' },
        payload: { name: 'one too many' }
      })
      assertError(refused, 507,
        'No id up to 2^53 - 1 is left for the server to assign; create the plant with a chosen id')
      assert.equal(refused.headers['retry-after'], undefined, 'retrying does not help')
      assert.equal(refused.headers.location, undefined)
      assert.equal((await createPlant(app, { id: 5, name: 'chosen' })).plant.id, 5)
      assert.deepEqual(
        (await app.inject({ url: '/plants', headers: AUTH })).json<PlantBody[]>().map((plant) => plant.id),
        [5, MAX_SAFE - 1, MAX_SAFE])
      assert.deepEqual((await app.inject({ url: '/health' })).json(), { status: 'ok' }, 'the service itself is healthy')
    })
  })
}
