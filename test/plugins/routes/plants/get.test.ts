import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../../../helpers/app.js'
import { assertError, createPlant, JSON_TYPE } from '../../../helpers/plants.js'

test('GET /plants/{id}: 200, the plant, its ETag', async (t) => {
  const app = await buildTestApp(t)
  const { plant, etag } = await createPlant(app, { name: 'Fern', tag: 'green' })
  const res = await app.inject({ url: '/plants/1', headers: AUTH })
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  assert.equal(res.headers.etag, etag)
  assert.deepEqual(res.json(), plant)
})

test('If-None-Match with the current ETag is a 304 with no body and the ETag', async (t) => {
  const app = await buildTestApp(t)
  const { etag } = await createPlant(app, { name: 'Fern' })
  for (const condition of [etag, `W/${etag}`, `"other", ${etag}`, `"a",W/"b" ,  ${etag}`, '*', ` ${etag} `]) {
    const res = await app.inject({ url: '/plants/1', headers: { ...AUTH, 'if-none-match': condition } })
    assert.equal(res.statusCode, 304, condition)
    assert.equal(res.body, '')
    assert.equal(res.headers.etag, etag)
    assert.equal(res.headers['content-type'], undefined)
    assert.equal(res.headers['content-length'], undefined)
  }
})

test('If-None-Match with a stale ETag is a 200 with the current plant', async (t) => {
  const app = await buildTestApp(t)
  const { etag: stale } = await createPlant(app, { name: 'Fern' })
  const patch = await app.inject({ method: 'PATCH', url: '/plants/1', headers: AUTH, payload: { name: 'Fern 2' } })
  for (const condition of [stale, `W/${stale}`, '"nope"']) {
    const res = await app.inject({ url: '/plants/1', headers: { ...AUTH, 'if-none-match': condition } })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers.etag, patch.headers.etag)
    assert.deepEqual(res.json(), patch.json())
  }
})

test('a malformed If-None-Match is a 400', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'Fern' })
  for (const condition of ['abc', '"unterminated', '*, "a"', ',', 'W/abc', '"a" "b"']) {
    assertError(await app.inject({ url: '/plants/1', headers: { ...AUTH, 'if-none-match': condition } }), 400,
      'If-None-Match must be * or a list of quoted entity tags')
  }
})

test('If-None-Match on a missing plant is still a 404', async (t) => {
  const app = await buildTestApp(t)
  assertError(await app.inject({ url: '/plants/9', headers: { ...AUTH, 'if-none-match': '*' } }), 404,
    'Plant 9 not found')
})

test('HEAD /plants/{id} answers like GET without a body', async (t) => {
  const app = await buildTestApp(t)
  const { etag } = await createPlant(app, { name: 'Fern' })
  const res = await app.inject({ method: 'HEAD', url: '/plants/1', headers: AUTH })
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers.etag, etag)
  assert.equal(res.body, '')
})

test('ids: 404 for a valid absent id (int64 max included), 400 for anything that is not an int64', async (t) => {
  const app = await buildTestApp(t)
  assertError(await app.inject({ url: '/plants/9223372036854775807', headers: AUTH }), 404,
    'Plant 9223372036854775807 not found')
  assertError(await app.inject({ url: '/plants/-9223372036854775808', headers: AUTH }), 404,
    'Plant -9223372036854775808 not found')
  for (const id of ['9223372036854775808', 'abc', '1.0', '01', '1e3', '%201']) {
    assertError(await app.inject({ url: `/plants/${id}`, headers: AUTH }), 400, 'params/id must match format "int64"')
  }
})

test('the ETag changes with every write that changes the plant and matches what the write answered', async (t) => {
  const app = await buildTestApp(t)
  const { etag: first } = await createPlant(app, { name: 'Fern' })
  const put = await app.inject({ method: 'PUT', url: '/plants/1', headers: AUTH, payload: { name: 'Fern 2' } })
  assert.notEqual(put.headers.etag, first)
  const get = await app.inject({ url: '/plants/1', headers: AUTH })
  assert.equal(get.headers.etag, put.headers.etag)
})

test('GET /plants/{id} needs a token', async (t) => {
  const app = await buildTestApp(t)
  await createPlant(app, { name: 'Fern' })
  assertError(await app.inject({ url: '/plants/1' }), 401, /authorization/i)
  assertError(await app.inject({ url: '/plants/1', headers: { authorization: 'Bearer wrong' } }), 401, /authorization/i)
})
