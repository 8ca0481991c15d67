import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { FastifyInstance, InjectOptions } from 'fastify'
import type { Plant } from '../../../../src/resources/plants.js'
import { AUTH, buildTestApp } from '../../../helpers/app.js'
import { apiTestDatabases } from '../../../helpers/databases.js'
import { assertError, createPlant } from '../../../helpers/plants.js'

/** If-None-Match on writes and If-Match on reads (RFC 9110 §13.1.1, §13.1.2, §13.2.2), on each store. */

const NONE_MATCH_FAILED = (id: number) => `Plant ${id} matches If-None-Match: it exists, and its current ` +
  'ETag is listed (or *)'
const MATCH_FAILED = (id: number) => `Plant ${id} does not match If-Match: it has changed or is gone; GET it again`

type Conditions = Record<string, string>

const WRITES: Array<{
  method: 'PUT' | 'PATCH' | 'DELETE',
  ok: number,
  request: (id: number, conditions: Conditions) => InjectOptions
}> = [
  {
    method: 'PUT',
    ok: 200,
    request: (id,
      conditions) => ({
      method: 'PUT',
      url: `/plants/${id}`,
      headers: { ...AUTH, ...conditions },
      payload: { name: 'New name' }
    })
  },
  {
    method: 'PATCH',
    ok: 200,
    request: (id,
      conditions) => ({
      method: 'PATCH',
      url: `/plants/${id}`,
      headers: { ...AUTH, 'content-type': 'application/merge-patch+json', ...conditions },
      payload: '{"tag":null}'
    })
  },
  {
    method: 'DELETE',
    ok: 204,
    request: (id, conditions) => ({ method: 'DELETE', url: `/plants/${id}`, headers: { ...AUTH, ...conditions } })
  }
]

async function current (app: FastifyInstance, id: number): Promise<{ status: number, etag: unknown, body: string }> {
  const res = await app.inject({ url: `/plants/${id}`, headers: AUTH })
  return { status: res.statusCode, etag: res.headers.etag, body: res.body }
}

for (const database of apiTestDatabases) {
  describe(`conditional requests on ${database.name}`, () => {
    for (const write of WRITES) {
      test(`${write.method} with If-None-Match: * on an existing plant is a 412 and changes nothing; on a missing ` +
        'one the write goes on (404)', async (t) => {
        const app = await buildTestApp(t, database.env(t))
        const { plant } = await createPlant(app, { name: 'Fern', tag: 'green' })
        const before = await current(app, plant.id)
        assertError(await app.inject(write.request(plant.id, { 'if-none-match': '*' })), 412,
          NONE_MATCH_FAILED(plant.id))
        assert.deepEqual(await current(app, plant.id), before)
        assertError(await app.inject(write.request(9, { 'if-none-match': '*' })), 404, 'Plant 9 not found')
        assert.equal((await current(app, 9)).status, 404)
      })

      test(`${write.method} with If-None-Match listing the current ETag (weak comparison) is a 412; ` +
        'listing others, it writes', async (t) => {
        const app = await buildTestApp(t, database.env(t))
        const { plant, etag } = await createPlant(app, { name: 'Fern', tag: 'green' })
        const before = await current(app, plant.id)
        for (const listed of [etag, `W/${etag}`, `"other", ${etag}`]) {
          assertError(await app.inject(write.request(plant.id, { 'if-none-match': listed })), 412,
            NONE_MATCH_FAILED(plant.id))
        }
        assert.deepEqual(await current(app, plant.id), before)
        // If-Match is judged first: a stale one is the If-Match 412 even when If-None-Match would fail too.
        assertError(await app.inject(write.request(plant.id, { 'if-match': '"stale"', 'if-none-match': '*' })), 412,
          MATCH_FAILED(plant.id))
        assertError(await app.inject(write.request(plant.id, { 'if-none-match': 'nope' })), 400,
          'If-None-Match must be * or a list of quoted entity tags')
        const res = await app.inject(
          write.request(plant.id, { 'if-match': etag, 'if-none-match': '"other", W/"older"' }))
        assert.equal(res.statusCode, write.ok, res.body)
      })

      test(`${write.method} with If-None-Match is tied to the ETag it judged: a write slipping in ` +
        'between makes it a 412', async (t) => {
        const app = await buildTestApp(t, database.env(t))
        const { plant } = await createPlant(app, { name: 'Fern', tag: 'green' })
        const read = app.store.plants.get.bind(app.store)
        t.mock.method(app.store.plants, 'get', async (id: bigint): Promise<Plant | undefined> => {
          const seen = await read(id)
          await app.store.plants.update(id, { name: 'Changed meanwhile' })
          return seen
        })
        assertError(await app.inject(write.request(plant.id, { 'if-none-match': '"other"' })), 412,
          MATCH_FAILED(plant.id))
        t.mock.restoreAll()
        const after = await app.inject({ url: `/plants/${plant.id}`, headers: AUTH })
        assert.equal(after.json<{ name: string }>().name, 'Changed meanwhile')
      })
    }

    test('GET and HEAD honour If-Match with the strong comparison: a stale or weak tag is a 412, judged ' +
      'before If-None-Match', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const { plant, etag } = await createPlant(app, { name: 'Fern' })
      const get = (conditions: Conditions) => app.inject({
        url: `/plants/${plant.id}`,
        headers: { ...AUTH, ...conditions }
      })
      for (const listed of [etag, '*', `"other", ${etag}`]) {
        const res = await get({ 'if-match': listed })
        assert.equal(res.statusCode, 200, listed)
        assert.equal(res.headers.etag, etag)
      }
      for (const listed of ['"stale"', `W/${etag}`]) {
        const res = await get({ 'if-match': listed })
        assertError(res, 412, MATCH_FAILED(plant.id))
        assert.equal(res.headers.etag, undefined)
      }
      assertError(await get({ 'if-match': '"stale"', 'if-none-match': etag }), 412, MATCH_FAILED(plant.id))
      const notModified = await get({ 'if-match': etag, 'if-none-match': etag })
      assert.equal(notModified.statusCode, 304)
      assert.equal(notModified.headers.etag, etag)
      assertError(await get({ 'if-match': 'nope' }), 400, 'If-Match must be * or a list of quoted entity tags')
      const head = await app.inject({
        method: 'HEAD',
        url: `/plants/${plant.id}`,
        headers: { ...AUTH, 'if-match': '"stale"' }
      })
      assert.equal(head.statusCode, 412)
      assert.equal(head.body, '')
      // A missing plant is a 404 whatever the conditions (RFC 9110 §13.2.1).
      assertError(await app.inject({ url: '/plants/9', headers: { ...AUTH, 'if-match': '*' } }), 404,
        'Plant 9 not found')
    })
  })
}
