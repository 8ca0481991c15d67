import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../../helpers/app.js'
import { assertError, createPlant } from '../../helpers/plants.js'

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
  assertError(await app.inject({ method: 'DELETE', url: '/plants/one', headers: AUTH }), 400, 'params/id must match format "int64"')
  assertError(await app.inject({ method: 'DELETE', url: '/plants/1' }), 401, /authorization/i)
  assert.equal((await app.inject({ url: '/plants/1', headers: AUTH })).statusCode, 200)
})
