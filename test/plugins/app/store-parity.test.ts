import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { AUTH, buildTestApp } from '../../helpers/app.js'
import { apiTestDatabases } from '../../helpers/databases.js'
import { assertError, createPlant, type PlantBody } from '../../helpers/plants.js'

const MAX = '9223372036854775807'
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' }

// The API answers the same on every store: run the behaviours that touch the database on each.
for (const database of apiTestDatabases) {
  describe(`API on ${database.name}`, () => {
    test('GET /health answers 200', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const res = await app.inject({ method: 'GET', url: '/health' })
      assert.equal(res.statusCode, 200)
      assert.deepEqual(res.json(), { status: 'ok' })
    })

    test('DELETE matches ids exactly: beyond 2^53 and int64 max', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      await app.store.plants.create({ id: 9007199254740992n, name: 'two to the 53' })
      await app.store.plants.create({ id: 9007199254740993n, name: 'one more' })
      await app.store.plants.create({ id: 9223372036854775807n, name: 'int64 max' })
      assert.equal((await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: AUTH })).statusCode,
        204)
      assert.equal(await app.store.plants.get(9007199254740993n), undefined)
      assert.equal((await app.store.plants.get(9007199254740992n))?.name, 'two to the 53')
      assert.equal(
        (await app.inject({ method: 'DELETE', url: '/plants/9223372036854775807', headers: AUTH })).statusCode, 204)
      const again = await app.inject({ method: 'DELETE', url: '/plants/9223372036854775807', headers: AUTH })
      assert.equal(again.statusCode, 404)
      assert.deepEqual(again.json(), { error: 404, message: 'Plant 9223372036854775807 not found' })
    })

    test('concurrent deletes of one plant give exactly one 204; the rest are 404', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const { item: plant } = await app.store.plants.create({ name: 'Contested' })
      const responses = await Promise.all(Array.from({ length: 30 }, () =>
        app.inject({ method: 'DELETE', url: `/plants/${plant.id}`, headers: AUTH })))
      const statuses = responses.map((res) => res.statusCode)
      assert.equal(statuses.filter((status) => status === 204).length, 1)
      assert.equal(statuses.filter((status) => status === 404).length, 29)
    })
    test('ids are exact: int64 max and 2^53 + 1 in GET, list and DELETE; POST takes ' +
      'chosen ids up to 2^53 - 1', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      await app.store.plants.create({ id: BigInt(MAX), name: 'max' })
      await app.store.plants.create({ id: 9007199254740993n, name: '2^53+1' })
      const read = await app.inject({ url: `/plants/${MAX}`, headers: AUTH })
      assert.match(read.body, new RegExp(`^\\{"id":${MAX},"name":"max",`))
      const list = await app.inject({ url: '/plants', headers: AUTH })
      assert.match(list.body, new RegExp(`^\\[\\{"id":9007199254740993,.*\\{"id":${MAX},`))
      const created = await app.inject({
        method: 'POST',
        url: '/plants',
        headers: JSON_AUTH,
        payload: '{"id":9007199254740991,"name":"2^53-1"}'
      })
      assert.equal(created.statusCode, 201)
      assert.equal(created.headers.location, '/plants/9007199254740991')
      assert.match(created.body, /^\{"id":9007199254740991,/)
      assertError(
        await app.inject({ method: 'POST', url: '/plants', headers: JSON_AUTH, payload: `{"id":${MAX},"name":"x"}` }),
        400, /body\/id/)
      assert.equal((await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: AUTH })).statusCode,
        204)
      assert.equal((await app.inject({ url: `/plants/${MAX}`, headers: AUTH })).statusCode, 200)
    })

    test('POST of a taken id is 409 and changes nothing; generated ids skip chosen ones', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const { plant } = await createPlant(app, { id: 2, name: 'chosen' })
      assertError(
        await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 2, name: 'again' } }), 409,
        'Plant 2 already exists')
      assert.deepEqual((await app.inject({ url: '/plants/2', headers: AUTH })).json(), plant)
      assert.equal((await createPlant(app, { name: 'generated' })).plant.id, 1)
      assert.equal((await createPlant(app, { name: 'generated' })).plant.id, 3)
    })

    test('ETags: GET sends the POST ETag, If-None-Match gives 304, a stale If-Match gives 412', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const { plant, etag } = await createPlant(app, { name: 'tagged' })
      const url = `/plants/${plant.id}`
      assert.equal((await app.inject({ url, headers: AUTH })).headers.etag, etag)
      assert.equal((await app.inject({ url, headers: { ...AUTH, 'if-none-match': etag } })).statusCode, 304)
      const put = await app.inject({
        method: 'PUT',
        url,
        headers: { ...AUTH, 'if-match': etag },
        payload: { name: 'renamed' }
      })
      assert.equal(put.statusCode, 200)
      assert.notEqual(put.headers.etag, etag)
      const stale = await app.inject({
        method: 'PUT',
        url,
        headers: { ...AUTH, 'if-match': etag },
        payload: { name: 'lost update' }
      })
      assertError(stale, 412, `Plant ${plant.id} does not match If-Match: it has changed or is gone; GET it again`)
      assertError(await app.inject({ method: 'DELETE', url, headers: { ...AUTH, 'if-match': etag } }), 412,
        /does not match If-Match/)
      assert.equal(
        (await app.inject(
          { method: 'DELETE', url, headers: { ...AUTH, 'if-match': String(put.headers.etag) } })).statusCode, 204)
    })

    test('pagination: Link rel="next" pages through every plant once, in id order, with the tag filter', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      for (let i = 1; i <= 5; i++) await createPlant(app, { name: `p${i}`, ...(i !== 3 && { tag: 'kept' }) })
      const seen: number[] = []
      let next: string | undefined = '/plants?limit=2&tag=kept'
      while (next !== undefined) {
        const res: LightMyRequestResponse = await app.inject({ url: next, headers: AUTH })
        assert.equal(res.statusCode, 200)
        seen.push(...res.json<PlantBody[]>().map((plant) => plant.id))
        next = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link ?? ''))?.[1]
      }
      assert.deepEqual(seen, [1, 2, 4, 5])
    })

    test('Idempotency-Key: a retry replays the first 201; another body is 422; one plant exists', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const post = async (payload: Record<string, unknown>) =>
        await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, 'idempotency-key': 'key-1' }, payload })
      const first = await post({ name: 'once' })
      const retry = await post({ name: 'once' })
      assert.equal(first.statusCode, 201)
      assert.equal(retry.statusCode, 201)
      assert.equal(retry.body, first.body)
      assert.equal(retry.headers.etag, first.headers.etag)
      assert.equal(retry.headers['idempotent-replayed'], 'true')
      assertError(await post({ name: 'different' }), 422,
        'This Idempotency-Key was already used with a different request body')
      assert.equal((await app.inject({ url: '/plants', headers: AUTH })).json<PlantBody[]>().length, 1)
    })

    test('concurrent POSTs of one chosen id: exactly one 201, the rest 409', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const responses = await Promise.all(Array.from({ length: 20 }, async (_, i) =>
        await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 77, name: `racer ${i}` } })))
      const statuses = responses.map((res) => res.statusCode)
      assert.equal(statuses.filter((status) => status === 201).length, 1)
      assert.equal(statuses.filter((status) => status === 409).length, 19)
    })
  })
}

/** The same requests, in order, on one app: statuses, chosen headers and bodies, timestamps masked. */
async function script (app: FastifyInstance): Promise<unknown[]> {
  const requests: Array<{
    method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    payload?: unknown,
    headers?: Record<string, string>
  }> = [
    { method: 'POST', url: '/plants', payload: { name: 'A', tag: 't' } },
    { method: 'POST', url: '/plants', payload: { id: 10, name: 'B' } },
    { method: 'POST', url: '/plants', payload: { id: 10, name: 'B again' } },
    { method: 'POST', url: '/plants', payload: { name: 'C' }, headers: { 'idempotency-key': 'k' } },
    { method: 'POST', url: '/plants', payload: { name: 'C' }, headers: { 'idempotency-key': 'k' } },
    { method: 'POST', url: '/plants', payload: { name: 'D' }, headers: { 'idempotency-key': 'k' } },
    { url: '/plants?limit=2' },
    { url: '/plants?limit=2&after=10' },
    { url: '/plants?tag=t' },
    {
      method: 'PATCH',
      url: '/plants/10',
      payload: { tag: 'u' },
      headers: { 'content-type': 'application/merge-patch+json' }
    },
    { method: 'PUT', url: '/plants/1', payload: { name: 'A2' } },
    { method: 'PUT', url: '/plants/404', payload: { name: 'nobody' } },
    { method: 'DELETE', url: '/plants/11' },
    { method: 'DELETE', url: '/plants/11' },
    { method: 'POST', url: '/plants', payload: { name: 'E' } },
    { url: '/plants' },
    { url: `/plants/${MAX}` }
  ]
  const answers: unknown[] = []
  for (const { headers, payload, ...request } of requests) {
    const res = await app.inject({
      ...request,
      headers: { ...AUTH, ...headers },
      ...(payload !== undefined && { payload: payload as Record<string, unknown> })
    })
    answers.push({
      request: `${request.method ?? 'GET'} ${request.url}`,
      status: res.statusCode,
      location: res.headers.location,
      link: res.headers.link,
      replayed: res.headers['idempotent-replayed'],
      body: res.body.replace(/"(createdAt|updatedAt)":"[^"]+"/g, '"$1":"…"')
    })
  }
  return answers
}

test('the same requests get the same answers on every store', async (t) => {
  const results = []
  for (const database of apiTestDatabases) results.push(await script(await buildTestApp(t, database.env(t))))
  for (const result of results.slice(1)) assert.deepEqual(result, results[0])
})
