import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { AUTH, buildTestApp } from '../../helpers/app.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'

const JSON_TYPE = 'application/json; charset=utf-8'

// What an older instance meets when a newer release renames what it reads (docs/upgrading.md).
describe('a table the service needs renamed under it (PostgreSQL)', { skip: TEST_DATABASE_URL === undefined }, () => {
  test('requests and readiness answer 503 in the Error shape, never 500; both recover once it is back', async (t) => {
    const { url, schema } = scratchDatabaseUrl(t)
    const app = await buildTestApp(t, { DATABASE_URL: url })
    const { item: plant } = await app.store.plants.create({ name: 'Fern' })
    await adminQuery(`ALTER TABLE ${schema}.idempotency_keys RENAME TO idempotency_keys_moved`)

    const keyedCreate = async (): Promise<LightMyRequestResponse> => await app.inject({
      method: 'POST',
      url: '/plants',
      headers: { ...AUTH, 'idempotency-key': 'rolling-1' },
      payload: { name: 'Moss' }
    })
    const create = await keyedCreate()
    assert.equal(create.statusCode, 503)
    assert.equal(create.headers['content-type'], JSON_TYPE)
    assert.deepEqual(create.json(),
      { error: 503, message: 'This instance cannot serve the database schema as it is now; retry shortly' })
    const ready = await app.inject({ method: 'GET', url: '/health/ready' })
    assert.equal(ready.statusCode, 503)
    assert.equal(ready.headers['retry-after'], '5')
    assert.deepEqual(ready.json(),
      { error: 503, message: 'Not ready: this instance cannot serve the database schema as it is now' })

    await adminQuery(`ALTER TABLE ${schema}.idempotency_keys_moved RENAME TO idempotency_keys`)
    assert.deepEqual((await app.inject({ method: 'GET', url: '/health/ready' })).json(), { status: 'ok' })
    const again = await keyedCreate()
    assert.equal(again.statusCode, 201)
    assert.equal((await app.inject({ method: 'GET', url: `/plants/${plant.id}`, headers: AUTH })).statusCode, 200)
  })
})
