import assert from 'node:assert/strict'
import { gzipSync } from 'node:zlib'
import { describe, test } from 'node:test'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { AUTH, buildTestApp } from '../../helpers/app.js'
import { apiTestDatabases } from '../../helpers/databases.js'
import { assertError, createPlant } from '../../helpers/plants.js'

/**
 * Request bodies are read one way (plugins/app/requests.ts): UTF-8 JSON in the media types the
 * operation consumes, nothing where the operation defines no body, nothing that could poison a
 * prototype. Every refusal leaves the store as it was: checked on each store.
 */

const PROTO_MESSAGE = 'body has a "__proto__" property, which is refused: it could change the prototype of objects'
const CONSTRUCTOR_MESSAGE = 'body has a "constructor" property with a "prototype", which is refused: it could change ' +
  'the prototype of objects'

/** The writes that read a body, each as a request for plant 1 with these headers and this payload. */
const BODY_WRITES: Array<{
  name: string,
  request: (headers: Record<string, string>, payload: string | Buffer) => InjectOptions,
  type: string
}> = [
  {
    name: 'POST /plants',
    type: 'application/json',
    request: (headers, payload) => ({ method: 'POST', url: '/plants', headers: { ...AUTH, ...headers }, payload })
  },
  {
    name: 'PUT /plants/1',
    type: 'application/json',
    request: (headers, payload) => ({ method: 'PUT', url: '/plants/1', headers: { ...AUTH, ...headers }, payload })
  },
  {
    name: 'PATCH /plants/1 (merge patch)',
    type: 'application/merge-patch+json',
    request: (headers, payload) => ({ method: 'PATCH', url: '/plants/1', headers: { ...AUTH, ...headers }, payload })
  },
  {
    name: 'PATCH /plants/1 (JSON)',
    type: 'application/json',
    request: (headers, payload) => ({ method: 'PATCH', url: '/plants/1', headers: { ...AUTH, ...headers }, payload })
  }
]

/** Every plant the store holds, as the API lists them. */
async function allPlants (app: FastifyInstance): Promise<unknown> {
  const res = await app.inject({ url: '/plants?limit=100', headers: AUTH })
  assert.equal(res.statusCode, 200)
  return res.json()
}

for (const database of apiTestDatabases) {
  describe(`request bodies on ${database.name}`, () => {
    test('a body declared in another charset than UTF-8 is a 415 on every write, merge patches ' +
      'too, and changes nothing', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      await createPlant(app, { name: 'Fern', tag: 'green' })
      const before = await allPlants(app)
      for (const write of BODY_WRITES) {
        const latin1 = Buffer.from('{"name":"Caf\xe9"}', 'latin1')
        assertError(await app.inject(write.request({ 'content-type': `${write.type}; charset=iso-8859-1` }, latin1)),
          415,
          'Content-Type charset "iso-8859-1" is not supported: send the body as UTF-8')
        const utf16 = Buffer.from('\ufeff{"name":"Café"}', 'utf16le')
        assertError(await app.inject(write.request({ 'content-type': `${write.type};charset="UTF-16"` }, utf16)), 415,
          'Content-Type charset "UTF-16" is not supported: send the body as UTF-8')
        assertError(await app.inject(write.request({ 'content-type': `${write.type}; charset=windows-1252` }, latin1)),
          415,
          'Content-Type charset "windows-1252" is not supported: send the body as UTF-8')
        assertError(await app.inject(write.request({ 'content-type': `${write.type}; charset=x-unknown` }, latin1)),
          415,
          'Content-Type charset "x-unknown" is not supported: send the body as UTF-8')
      }
      assert.deepEqual(await allPlants(app), before)
    })

    test('UTF-8 in any of its spellings is read; bytes that are not UTF-8 are a 400, ' +
      'never stored as U+FFFD', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      for (const charset of ['utf-8', 'UTF-8', '"utf-8"', 'utf8']) {
        const res = await app.inject({
          method: 'POST',
          url: '/plants',
          headers: { ...AUTH, 'content-type': `application/json; charset=${charset}` },
          payload: Buffer.from('{"name":"Café"}')
        })
        assert.equal(res.statusCode, 201, res.body)
        assert.equal(res.json<{ name: string }>().name, 'Café')
      }
      const before = await allPlants(app)
      for (const write of BODY_WRITES) {
        const latin1 = Buffer.from('{"name":"Caf\xe9"}', 'latin1')
        assertError(await app.inject(write.request({ 'content-type': write.type }, latin1)), 400,
          'Body is not valid UTF-8')
        assertError(await app.inject(write.request({ 'content-type': `${write.type}; charset=utf-8` }, latin1)), 400,
          'Body is not valid UTF-8')
      }
      assert.deepEqual(await allPlants(app), before)
    })

    test('a body with a Content-Encoding (gzip, br, a list) is a 415 with Accept-Encoding: identity and changes ' +
      'nothing; identity is accepted', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      await createPlant(app, { name: 'Fern' })
      const before = await allPlants(app)
      for (const write of BODY_WRITES) {
        const json = { 'content-type': write.type }
        const gzipped = gzipSync('{"name":"Zipped"}')
        for (const [coding, payload] of [['gzip', gzipped], ['gzip', '{"name":"Not really zipped"}'],
          ['br', '{"name":"x"}'], ['identity, gzip', gzipped]] as const) {
          const res = await app.inject(write.request({ ...json, 'content-encoding': coding }, payload))
          assertError(res, 415, `Content-Encoding "${coding}" is not supported: send the body without a content coding`)
          assert.equal(res.headers['accept-encoding'], 'identity')
        }
      }
      assert.deepEqual(await allPlants(app), before)
      for (const coding of ['identity', 'IDENTITY', '']) {
        const res = await app.inject({
          method: 'POST',
          url: '/plants',
          headers: { ...AUTH, 'content-type': 'application/json', 'content-encoding': coding },
          payload: '{"name":"Plain"}'
        })
        assert.equal(res.statusCode, 201, res.body)
      }
    })

    test('DELETE and GET with Content-Type: application/json and an empty body are ' +
      'answered as without it', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const { plant, etag } = await createPlant(app, { name: 'Fern' })
      const json = { ...AUTH, 'content-type': 'application/json' }
      const read = await app.inject({ method: 'GET', url: `/plants/${plant.id}`, headers: json, payload: '' })
      assert.equal(read.statusCode, 200, read.body)
      assert.equal(read.headers.etag, etag)
      const list = await app.inject({ method: 'GET', url: '/plants', headers: { ...json, 'content-length': '0' } })
      assert.equal(list.statusCode, 200, list.body)
      const head = await app.inject({ method: 'HEAD', url: `/plants/${plant.id}`, headers: json, payload: '' })
      assert.equal(head.statusCode, 200)
      const deleted = await app.inject({ method: 'DELETE', url: `/plants/${plant.id}`, headers: json, payload: '' })
      assert.equal(deleted.statusCode, 204, deleted.body)
      assert.equal(deleted.body, '')
      // What a browser's fetch(url, { method: 'DELETE', body: '' }) sends: text/plain, no bytes.
      const { plant: other } = await createPlant(app, { name: 'Ivy' })
      const fromFetch = await app.inject({
        method: 'DELETE',
        url: `/plants/${other.id}`,
        headers: { ...AUTH, 'content-type': 'text/plain;charset=UTF-8' },
        payload: ''
      })
      assert.equal(fromFetch.statusCode, 204, fromFetch.body)
      assert.deepEqual(await allPlants(app), [])
    })

    test('a body on DELETE, GET or HEAD, whatever its type, is a 400 that says so, and deletes nothing', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const { plant } = await createPlant(app, { name: 'Fern' })
      const before = await allPlants(app)
      const url = `/plants/${plant.id}`
      const bodies: Array<[type: string, payload: string]> = [['application/json', '{}'],
        ['application/json', '{"ids":[1,2,3]}'], ['text/plain', 'please'], ['application/xml', '<x/>']]
      for (const [type, payload] of bodies) {
        const headers = { ...AUTH, 'content-type': type }
        assertError(await app.inject({ method: 'DELETE', url, headers, payload }), 400,
          'DELETE /plants/{id} takes no request body')
        assertError(await app.inject({ method: 'GET', url, headers, payload }), 400,
          'GET /plants/{id} takes no request body')
        assertError(await app.inject({ method: 'GET', url: '/plants', headers, payload }), 400,
          'GET /plants takes no request body')
        const head = await app.inject({ method: 'HEAD', url, headers, payload })
        assert.equal(head.statusCode, 400)
        assert.equal(head.body, '')
      }
      assertError(await app.inject({ method: 'DELETE', url, headers: AUTH, payload: 'no type at all' }), 400,
        'DELETE /plants/{id} takes no request body')
      assertError(
        await app.inject(
          { method: 'GET', url: '/health', headers: { 'content-type': 'application/json' }, payload: '{}' }), 400,
        'GET /health takes no request body')
      // Still authenticated first: without a token the answer is the 401.
      assertError(
        await app.inject({ method: 'DELETE', url, headers: { 'content-type': 'application/json' }, payload: '{}' }),
        401, /authorization/i)
      assert.deepEqual(await allPlants(app), before)
    })

    test('__proto__ and constructor.prototype in a body are refused with a message that says so, at any depth or ' +
      'escape, and change nothing', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      await createPlant(app, { name: 'Fern', tag: 'green' })
      const before = await allPlants(app)
      for (const write of BODY_WRITES) {
        const json = { 'content-type': write.type }
        assertError(await app.inject(write.request(json, '{"name":"x","__proto__":{"polluted":true}}')), 400,
          PROTO_MESSAGE)
        assertError(await app.inject(write.request(json, '{"name":"x","\\u005f_proto__":{"polluted":true}}')), 400,
          PROTO_MESSAGE)
        assertError(await app.inject(write.request(json, '{"name":"x","tag":[{"deep":{"__proto__":{}}}]}')), 400,
          'body/tag/0/deep has a "__proto__" property, which is refused: it could change the prototype of objects')
        assertError(await app.inject(write.request(json, '{"name":"x","constructor":{"prototype":{"polluted":true}}}')),
          400, CONSTRUCTOR_MESSAGE)
        assertError(await app.inject(write.request(json, '[{"constructor":{"prototype":null}}]')), 400,
          'body/0 has a "constructor" property with a "prototype", which is refused: it could change the ' +
            'prototype of objects')
        // A constructor without a prototype is an ordinary unknown property.
        assertError(await app.inject(write.request(json, '{"name":"x","constructor":{"name":"y"}}')), 400,
          "body has unknown property 'constructor'")
      }
      assert.equal(({} as Record<string, unknown>).polluted, undefined)
      assert.deepEqual(await allPlants(app), before)
    })
  })
}
