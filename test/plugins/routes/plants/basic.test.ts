import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../../../helpers/app.js'
import { assertError, createPlant, JSON_TYPE, type PlantBody } from '../../../helpers/plants.js'

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

test('POST /plants creates a plant: 201, Location, ETag, the plant with a trimmed name', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: '  Monstera ', tag: 'tropical' } })
  assert.equal(res.statusCode, 201)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  assert.equal(res.headers.location, '/plants/1')
  assert.match(String(res.headers.etag), /^"[A-Za-z0-9_-]{22}"$/)
  const plant = res.json()
  assert.deepEqual(Object.keys(plant).sort(), ['createdAt', 'id', 'name', 'tag', 'updatedAt'])
  assert.equal(plant.id, 1)
  assert.equal(plant.name, 'Monstera')
  assert.equal(plant.tag, 'tropical')
  assert.match(plant.createdAt, ISO)
  assert.equal(plant.updatedAt, plant.createdAt)
})

test('GET /plants/{id} returns the plant with the ETag POST sent; 404 when absent', async (t) => {
  const app = await buildTestApp(t)
  const { plant, etag } = await createPlant(app, { name: 'Fern' })
  const res = await app.inject({ url: `/plants/${plant.id}`, headers: AUTH })
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers.etag, etag)
  assert.deepEqual(res.json(), plant)
  assertError(await app.inject({ url: '/plants/2', headers: AUTH }), 404, 'Plant 2 not found')
})

test('GET /plants lists plants in id order', async (t) => {
  const app = await buildTestApp(t)
  const a = await createPlant(app, { name: 'A' })
  const b = await createPlant(app, { name: 'B', tag: 'x' })
  const res = await app.inject({ url: '/plants', headers: AUTH })
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers.link, undefined)
  assert.deepEqual(res.json(), [a.plant, b.plant])
})

test('PUT, PATCH and DELETE edit a plant', async (t) => {
  const app = await buildTestApp(t)
  const { plant } = await createPlant(app, { name: 'A', tag: 'x' })
  const put = await app.inject({ method: 'PUT', url: '/plants/1', headers: AUTH, payload: { name: 'B' } })
  assert.equal(put.statusCode, 200)
  assert.deepEqual({ ...put.json<PlantBody>(), updatedAt: undefined }, { id: 1, name: 'B', createdAt: plant.createdAt, updatedAt: undefined })
  const patch = await app.inject({ method: 'PATCH', url: '/plants/1', headers: { ...AUTH, 'content-type': 'application/merge-patch+json' }, payload: '{"tag":"y"}' })
  assert.equal(patch.statusCode, 200)
  assert.equal(patch.json().tag, 'y')
  assert.equal(patch.json().name, 'B')
  const del = await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  assert.equal(del.statusCode, 204)
  assert.equal(del.body, '')
  assert.equal(del.headers['content-type'], undefined)
})
