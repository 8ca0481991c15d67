import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../../../helpers/app.js'
import { assertError, createPlant, JSON_TYPE, type PlantBody } from '../../../helpers/plants.js'

const NAME_RULE = 'body/name must be 1 to 100 characters after trimming surrounding white space'
const put = (id: string | number, payload: unknown, headers: Record<string, string> = {}) =>
  ({
    method: 'PUT' as const,
    url: `/plants/${id}`,
    headers: { ...AUTH, ...headers },
    payload: payload as Record<string, unknown>
  })

test('PUT replaces name and tag: 200, the plant, its new ETag; createdAt kept, updatedAt later', async (t) => {
  const app = await buildTestApp(t)
  const { plant, etag } = await createPlant(app, { name: 'Fern', tag: 'green' })
  const res = await app.inject(put(1, { name: '  Boston fern ', tag: 'shade' }))
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  const replaced = res.json<PlantBody>()
  assert.deepEqual({ ...replaced, updatedAt: '' }, {
    id: 1,
    name: 'Boston fern',
    tag: 'shade',
    createdAt: plant.createdAt,
    updatedAt: ''
  })
  assert.ok(replaced.updatedAt > plant.updatedAt, 'updatedAt moves forward')
  assert.notEqual(res.headers.etag, etag)
  const get = await app.inject({ url: '/plants/1', headers: AUTH })
  assert.deepEqual(get.json(), replaced)
  assert.equal(get.headers.etag, res.headers.etag)
})

test('PUT without a tag clears the tag', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'Fern', tag: 'green' })
  const res = await app.inject(put(1, { name: 'Fern' }))
  assert.equal(res.statusCode, 200)
  assert.equal('tag' in res.json(), false)
})

test('updatedAt strictly increases on every write, even within one millisecond', async (t) => {
  const app = await buildTestApp(t)
  const { plant } = await createPlant(app, { name: 'Fern' })
  t.mock.method(Date, 'now', () => Date.parse(plant.updatedAt))
  let last = plant.updatedAt
  for (let i = 0; i < 3; i++) {
    const res = await app.inject(put(1, { name: `Fern ${i}` }))
    const { updatedAt, createdAt } = res.json<PlantBody>()
    assert.ok(updatedAt > last, `${updatedAt} > ${last}`)
    assert.equal(createdAt, plant.createdAt)
    last = updatedAt
  }
})

test('a PUT of identical content changes nothing: the same plant, updatedAt and ETag', async (t) => {
  const app = await buildTestApp(t)
  const { plant, etag } = await createPlant(app, { name: 'Fern', tag: 'green' })
  const res = await app.inject(put(1, { name: ' Fern', tag: 'green' }))
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers.etag, etag)
  assert.deepEqual(res.json<PlantBody>(), plant)
})

test('PUT name boundaries: 0 and 101 characters after trimming are 400s, 1 and 100 are stored trimmed', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'Fern' })
  assertError(await app.inject(put(1, { name: '   ' })), 400, NAME_RULE)
  assertError(await app.inject(put(1, { name: 'x'.repeat(101) })), 400, NAME_RULE)
  assert.equal((await app.inject(put(1, { name: ' y ' }))).json().name, 'y')
  assert.equal((await app.inject(put(1, { name: ` ${'z'.repeat(100)} ` }))).json().name, 'z'.repeat(100))
  assertError(await app.inject(put(1, { name: 'a', tag: '' })), 400, 'body/tag must NOT have fewer than 1 characters')
  assertError(await app.inject(put(1, { name: 'a', tag: 't'.repeat(51) })), 400,
    'body/tag must NOT have more than 50 characters')
  assert.equal((await app.inject(put(1, { name: 'a', tag: 't'.repeat(50) }))).json().tag, 't'.repeat(50))
})

test('PUT needs the whole plant: a missing name, an unknown field or an id in the body are 400s', async (t) => {
  const app = await buildTestApp(t)
  const { plant } = await createPlant(app, { name: 'Fern', tag: 'green' })
  assertError(await app.inject(put(1, { tag: 'x' })), 400, "body must have property 'name'")
  assertError(await app.inject(put(1, { name: 'a', colour: 'red' })), 400, "body has unknown property 'colour'")
  assertError(await app.inject(put(1, { name: 'a', id: 1 })), 400, "body has unknown property 'id'")
  assertError(await app.inject(put(1, { name: 'a', tag: null })), 400, 'body/tag must be string')
  assertError(await app.inject(put(1, '[]', { 'content-type': 'application/json' })), 400, 'body must be object')
  assertError(await app.inject(put(1, '{"name":"a"}', { 'content-type': 'application/merge-patch+json' })), 415,
    'Unsupported Media Type')
  assert.deepEqual((await app.inject({ url: '/plants/1', headers: AUTH })).json(), plant)
})

test('PUT on a missing plant is a 404 and creates nothing', async (t) => {
  const app = await buildTestApp(t)
  assertError(await app.inject(put(5, { name: 'a' })), 404, 'Plant 5 not found')
  assertError(await app.inject(put('x', { name: 'a' })), 400, 'params/id must match format "int64"')
  assert.deepEqual((await app.inject({ url: '/plants', headers: AUTH })).json(), [])
})

test('PUT needs a token', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'Fern' })
  assertError(await app.inject({ method: 'PUT', url: '/plants/1', payload: { name: 'a' } }), 401, /authorization/i)
})
