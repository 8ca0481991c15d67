import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../../../helpers/app.js'
import { assertError, createPlant, JSON_TYPE, type PlantBody } from '../../../helpers/plants.js'

const MERGE_PATCH = { 'content-type': 'application/merge-patch+json' }
const patch = (id: string | number, body: string, headers: Record<string, string> = MERGE_PATCH) =>
  ({ method: 'PATCH' as const, url: `/plants/${id}`, headers: { ...AUTH, ...headers }, payload: body })

test('PATCH with a merge patch changes only the fields it names', async (t) => {
  const app = await buildTestApp(t)
  const { plant, etag } = await createPlant(app, { name: 'Fern', tag: 'green' })
  const res = await app.inject(patch(1, '{"name":"  Boston fern "}'))
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  assert.notEqual(res.headers.etag, etag)
  const patched = res.json<PlantBody>()
  assert.deepEqual({ ...patched, updatedAt: '' }, { ...plant, name: 'Boston fern', updatedAt: '' })
  assert.ok(patched.updatedAt > plant.updatedAt)
  const tagged = await app.inject(patch(1, '{"tag":"shade"}'))
  assert.deepEqual({ ...tagged.json<PlantBody>(), updatedAt: '' }, {
    ...plant,
    name: 'Boston fern',
    tag: 'shade',
    updatedAt: ''
  })
})

test('"tag": null clears the tag; a missing tag keeps it', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'Fern', tag: 'green' })
  assert.equal((await app.inject(patch(1, '{"name":"Fern 2"}'))).json().tag, 'green')
  const res = await app.inject(patch(1, '{"tag":null}'))
  assert.equal(res.statusCode, 200)
  assert.equal('tag' in res.json(), false)
  assert.equal('tag' in (await app.inject({ url: '/plants/1', headers: AUTH })).json(), false)
})

test('plain JSON (with or without charset) is accepted as a merge patch too', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'Fern' })
  assert.equal((await app.inject(patch(1, '{"tag":"a"}', { 'content-type': 'application/json' }))).json().tag, 'a')
  assert.equal(
    (await app.inject(patch(1, '{"tag":"b"}', { 'content-type': 'application/json; charset=utf-8' }))).json().tag, 'b')
  assert.equal(
    (await app.inject(
      patch(1, '{"tag":"c"}', { 'content-type': 'application/merge-patch+json; charset=utf-8' }))).json().tag, 'c')
})

test('a patch that changes nothing changes nothing: the same plant, updatedAt and ETag', async (t) => {
  const app = await buildTestApp(t)
  const { plant, etag } = await createPlant(app, { name: 'Fern', tag: 'green' })
  for (const body of ['{}', '{"name":"Fern"}', '{"name":" Fern ","tag":"green"}']) {
    const res = await app.inject(patch(1, body))
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers.etag, etag)
    assert.deepEqual(res.json<PlantBody>(), plant)
  }
})

test('the name cannot be removed or emptied, and keeps the 1..100 rule', async (t) => {
  const app = await buildTestApp(t)
  const { plant } = await createPlant(app, { name: 'Fern', tag: 'green' })
  assertError(await app.inject(patch(1, '{"name":null}')), 400, 'body/name must be string')
  assertError(await app.inject(patch(1, '{"name":"  "}')), 400,
    'body/name must be 1 to 100 characters after trimming surrounding white space')
  assertError(await app.inject(patch(1, `{"name":"${'x'.repeat(101)}"}`)), 400,
    'body/name must be 1 to 100 characters after trimming surrounding white space')
  assert.equal((await app.inject(patch(1, `{"name":" ${'x'.repeat(100)} "}`))).json().name, 'x'.repeat(100))
  assert.equal((await app.inject(patch(1, '{"name":"x"}'))).json().name, 'x')
  assertError(await app.inject(patch(1, '{"tag":""}')), 400, 'body/tag must NOT have fewer than 1 characters')
  assertError(await app.inject(patch(1, `{"tag":"${'t'.repeat(51)}"}`)), 400,
    'body/tag must NOT have more than 50 characters')
  assert.equal((await app.inject(patch(1, `{"tag":"${'t'.repeat(50)}"}`))).json().tag, 't'.repeat(50))
  assertError(await app.inject(patch(1, '{"tag":5}')), 400, 'body/tag must be string,null')
  assert.equal((await app.inject({ url: '/plants/1', headers: AUTH })).json().createdAt, plant.createdAt)
})

test('a patch that is not an object, or has unknown fields, is a 400', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'Fern' })
  for (const body of ['[]', 'null', '"x"', '3']) {
    assertError(await app.inject(patch(1, body)), 400, 'body must be object')
  }
  assertError(await app.inject(patch(1, '{"colour":"red"}')), 400, "body has unknown property 'colour'")
  assertError(await app.inject(patch(1, '{"id":2}')), 400, "body has unknown property 'id'")
  assertError(await app.inject(patch(1, '{"name":')), 400, /not valid JSON/)
  // A member named twice (I-JSON): "tag" would otherwise be whichever came last.
  assertError(await app.inject(patch(1, '{"tag":"a","tag":null}')), 400,
    'body has the member "tag" more than once: member names must be unique (I-JSON, RFC 7493)')
})

test('a patch that is neither JSON nor a merge patch is a 415', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'Fern' })
  for (const type of ['text/plain', 'application/json-patch+json', 'application/x-www-form-urlencoded']) {
    assertError(await app.inject(patch(1, '{"tag":"a"}', { 'content-type': type })), 415, 'Unsupported Media Type')
  }
})

test('PATCH on a missing plant is a 404; a bad id a 400', async (t) => {
  const app = await buildTestApp(t)
  assertError(await app.inject(patch(3, '{"tag":"a"}')), 404, 'Plant 3 not found')
  assertError(await app.inject(patch('1.5', '{"tag":"a"}')), 400, 'params/id must match format "int64"')
})

test('PATCH needs a token', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'Fern' })
  assertError(await app.inject({ method: 'PATCH', url: '/plants/1', headers: MERGE_PATCH, payload: '{}' }), 401,
    /authorization/i)
})
