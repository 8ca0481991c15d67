import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../../../helpers/app.js'
import { assertError, createPlant } from '../../../helpers/plants.js'

test('DELETE answers 204 with an empty body and no Content-Type, then the plant is gone', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'Fern' })
  const res = await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  assert.equal(res.statusCode, 204)
  assert.equal(res.body, '')
  assert.equal(res.headers['content-type'], undefined)
  assert.equal(res.headers['content-length'], undefined)
  assertError(await app.inject({ url: '/plants/1', headers: AUTH }), 404, 'Plant 1 not found')
  assertError(await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH }), 404, 'Plant 1 not found')
})

test('a deleted id is never handed out again', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'a' })
  await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  assert.equal((await createPlant(app, { name: 'b' })).plant.id, 2)
})

test('DELETE: 400 for an id that is not an int64, 401 without a token', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'a' })
  assertError(await app.inject({ method: 'DELETE', url: '/plants/one', headers: AUTH }), 400,
    'params/id must match format "int64"')
  assertError(await app.inject({ method: 'DELETE', url: '/plants/1' }), 401, /authorization/i)
  assert.equal((await app.inject({ url: '/plants/1', headers: AUTH })).statusCode, 200)
})

test('DELETE accepts every canonical int64, the extremes included', async (t) => {
  const app = await buildTestApp(t)
  for (const id of ['0', '-1', '9223372036854775807', '-9223372036854775808']) {
    assertError(await app.inject({ method: 'DELETE', url: `/plants/${id}`, headers: AUTH }), 404,
      `Plant ${id} not found`)
  }
})

test('DELETE answers 400 for every id that is not a canonical int64, and deletes nothing a ' +
  'lenient reading would match', async (t) => {
  const app = await buildTestApp(t)
  await app.store.plants.create({ id: 1000n, name: 'would match 1e3' })
  await app.store.plants.create({ id: 16n, name: 'would match 0x10' })
  await app.store.plants.create({ id: 5n, name: 'would match +5' })
  await app.store.plants.create({ id: 12n, name: 'would match 00012' })
  const invalid = [
    '9223372036854775808', '-9223372036854775809', '99999999999999999999', '1.5', 'abc', '1e3', '0x10',
    '%2B5', '00012', '%205', '1.0', '-0', '', '%20', '5%20', '1_000', '１'
  ]
  for (const id of invalid) {
    const res = await app.inject({ method: 'DELETE', url: `/plants/${id}`, headers: AUTH })
    assert.equal(res.statusCode, 400, `id ${JSON.stringify(id)}`)
    assertError(res, 400, 'params/id must match format "int64"')
  }
  for (const id of [1000n, 16n, 5n, 12n]) assert.notEqual(await app.store.plants.get(id), undefined)
})
