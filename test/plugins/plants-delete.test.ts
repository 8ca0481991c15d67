import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../helpers/app.js'

test('DELETE /plants/{id} answers 204 with an empty body and no Content-Type, and the plant is gone', async (t) => {
  const app = await buildTestApp(t)
  const { plant } = await app.store.create({ name: 'Monstera' })
  const res = await app.inject({ method: 'DELETE', url: `/plants/${plant.id}`, headers: AUTH })
  assert.equal(res.statusCode, 204)
  assert.equal(res.body, '')
  assert.equal(res.headers['content-type'], undefined)
  assert.equal(res.headers['content-length'], undefined)
  assert.equal(await app.store.get(plant.id), undefined)
})

test('DELETE /plants/{id} answers 404 in the Error shape when the plant does not exist', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.inject({ method: 'DELETE', url: '/plants/42', headers: AUTH })
  assert.equal(res.statusCode, 404)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  assert.deepEqual(res.json(), { error: 404, message: 'Plant 42 not found' })
})

test('DELETE /plants/{id} accepts every canonical int64, the extremes included', async (t) => {
  const app = await buildTestApp(t)
  for (const id of ['0', '-1', '9223372036854775807', '-9223372036854775808']) {
    const res = await app.inject({ method: 'DELETE', url: `/plants/${id}`, headers: AUTH })
    assert.equal(res.statusCode, 404, id)
    assert.deepEqual(res.json(), { error: 404, message: `Plant ${id} not found` })
  }
})

test('DELETE /plants/{id} matches ids beyond 2^53 exactly, with no rounding', async (t) => {
  const app = await buildTestApp(t)
  await app.store.create({ id: 9007199254740992n, name: 'two to the 53' })
  await app.store.create({ id: 9007199254740993n, name: 'one more' })
  await app.store.create({ id: 9223372036854775807n, name: 'int64 max' })

  const res = await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: AUTH })
  assert.equal(res.statusCode, 204)
  assert.equal(await app.store.get(9007199254740993n), undefined)
  assert.equal((await app.store.get(9007199254740992n))?.name, 'two to the 53')

  const max = await app.inject({ method: 'DELETE', url: '/plants/9223372036854775807', headers: AUTH })
  assert.equal(max.statusCode, 204)
  assert.equal(await app.store.get(9223372036854775807n), undefined)
})

test('DELETE /plants/{id} answers 400 for every id that is not a canonical int64', async (t) => {
  const app = await buildTestApp(t)
  await app.store.create({ id: 1000n, name: 'would match 1e3' })
  await app.store.create({ id: 16n, name: 'would match 0x10' })
  await app.store.create({ id: 5n, name: 'would match +5' })
  await app.store.create({ id: 12n, name: 'would match 00012' })
  const invalid = [
    '9223372036854775808', '-9223372036854775809', '99999999999999999999', '1.5', 'abc', '1e3', '0x10',
    '%2B5', '00012', '%205', '1.0', '-0', '', '%20', '5%20', '1_000', '１'
  ]
  for (const id of invalid) {
    const res = await app.inject({ method: 'DELETE', url: `/plants/${id}`, headers: AUTH })
    assert.equal(res.statusCode, 400, `id ${JSON.stringify(id)}`)
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    assert.deepEqual(res.json(), { error: 400, message: 'params/id must match format "int64"' }, `id ${JSON.stringify(id)}`)
  }
  // Nothing was deleted by a lenient reading of any of them.
  for (const id of [1000n, 16n, 5n, 12n]) assert.notEqual(await app.store.get(id), undefined)
})

test('concurrent deletes of one plant give exactly one 204; the rest are 404', async (t) => {
  const app = await buildTestApp(t)
  const { plant } = await app.store.create({ name: 'Contested' })
  const responses = await Promise.all(Array.from({ length: 50 }, () =>
    app.inject({ method: 'DELETE', url: `/plants/${plant.id}`, headers: AUTH })))
  const statuses = responses.map((res) => res.statusCode)
  assert.equal(statuses.filter((status) => status === 204).length, 1)
  assert.equal(statuses.filter((status) => status === 404).length, 49)
})
