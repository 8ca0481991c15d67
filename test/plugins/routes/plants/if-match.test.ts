import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { AUTH, buildTestApp } from '../../../helpers/app.js'
import { assertError, createPlant } from '../../../helpers/plants.js'

/** The three conditional writes, each as a request factory and the status it answers on success. */
const WRITES: Array<{
  method: 'PUT' | 'PATCH' | 'DELETE',
  ok: number,
  request: (id: number, ifMatch?: string) => InjectOptions
}> = [
  {
    method: 'PUT',
    ok: 200,
    request: (id,
      ifMatch) => ({
      method: 'PUT',
      url: `/plants/${id}`,
      headers: { ...AUTH, ...(ifMatch !== undefined && { 'if-match': ifMatch }) },
      payload: { name: 'New name' }
    })
  },
  {
    method: 'PATCH',
    ok: 200,
    request: (id,
      ifMatch) => ({
      method: 'PATCH',
      url: `/plants/${id}`,
      headers: {
        ...AUTH,
        'content-type': 'application/merge-patch+json',
        ...(ifMatch !== undefined && { 'if-match': ifMatch })
      },
      payload: '{"tag":null}'
    })
  },
  {
    method: 'DELETE',
    ok: 204,
    request: (id,
      ifMatch) => ({
      method: 'DELETE',
      url: `/plants/${id}`,
      headers: { ...AUTH, ...(ifMatch !== undefined && { 'if-match': ifMatch }) }
    })
  }
]

const getPlant = (app: FastifyInstance, id: number) => app.inject({ url: `/plants/${id}`, headers: AUTH })

for (const write of WRITES) {
  test(`${write.method} with If-Match of the current ETag (alone, in a list, or *) succeeds`, async (t) => {
    const app = await buildTestApp(t)
    for (const form of [(etag: string) => etag, (etag: string) => `"stale", ${etag}`, () => '*']) {
      const { plant, etag } = await createPlant(app, { name: 'Fern', tag: 'green' })
      const res = await app.inject(write.request(plant.id, form(etag)))
      assert.equal(res.statusCode, write.ok, res.body)
    }
  })

  test(`${write.method} with a stale ETag is a 412 in the Error shape and changes nothing`, async (t) => {
    const app = await buildTestApp(t)
    const { etag: stale } = await createPlant(app, { name: 'Fern', tag: 'green' })
    const current = await app.inject({ method: 'PATCH', url: '/plants/1', headers: AUTH, payload: { name: 'Fern 2' } })
    const res = await app.inject(write.request(1, stale))
    assertError(res, 412, 'Plant 1 does not match If-Match: it has changed or is gone; GET it again')
    const after = await getPlant(app, 1)
    assert.equal(after.statusCode, 200)
    assert.deepEqual(after.json(), current.json())
    assert.equal(after.headers.etag, current.headers.etag)
  })

  test(`${write.method}: If-Match uses the strong comparison, so a weak ETag never matches`, async (t) => {
    const app = await buildTestApp(t)
    const { etag } = await createPlant(app, { name: 'Fern' })
    assertError(await app.inject(write.request(1, `W/${etag}`)), 412, /does not match If-Match/)
    assert.equal((await getPlant(app, 1)).headers.etag, etag)
  })

  test(`${write.method}: If-Match on a missing plant is a 412 (no current ` +
    'representation), without it a 404', async (t) => {
    const app = await buildTestApp(t)
    assertError(await app.inject(write.request(9, '*')), 412,
      'Plant 9 does not match If-Match: it has changed or is gone; GET it again')
    assertError(await app.inject(write.request(9, '"abc"')), 412, /does not match If-Match/)
    assertError(await app.inject(write.request(9)), 404, 'Plant 9 not found')
    assert.equal((await getPlant(app, 9)).statusCode, 404)
  })

  test(`${write.method}: a malformed If-Match is a 400`, async (t) => {
    const app = await buildTestApp(t)
    const { etag } = await createPlant(app, { name: 'Fern' })
    for (const condition of ['abc', etag.slice(1, -1), '"a" "b"', '*, "a"', '']) {
      assertError(await app.inject(write.request(1, condition)), 400,
        'If-Match must be * or a list of quoted entity tags')
    }
    assert.equal((await getPlant(app, 1)).headers.etag, etag)
  })
}

test('two clients editing the same version: the second write is refused, no update is lost', async (t) => {
  const app = await buildTestApp(t)
  const { etag } = await createPlant(app, { name: 'Fern', tag: 'green' })
  const [first, second] = await Promise.all([
    app.inject(
      { method: 'PATCH', url: '/plants/1', headers: { ...AUTH, 'if-match': etag }, payload: { name: 'Alice' } }),
    app.inject({ method: 'PATCH', url: '/plants/1', headers: { ...AUTH, 'if-match': etag }, payload: { tag: 'Bob' } })
  ])
  assert.deepEqual([first.statusCode, second.statusCode].sort(), [200, 412])
  const winner = first.statusCode === 200 ? first : second
  assert.deepEqual((await getPlant(app, 1)).json(), winner.json())
})

test('the ETag a write returns is the one the next conditional write needs', async (t) => {
  const app = await buildTestApp(t)
  const { etag } = await createPlant(app, { name: 'Fern' })
  const put = await app.inject({
    method: 'PUT',
    url: '/plants/1',
    headers: { ...AUTH, 'if-match': etag },
    payload: { name: 'a' }
  })
  const patch = await app.inject({
    method: 'PATCH',
    url: '/plants/1',
    headers: { ...AUTH, 'if-match': String(put.headers.etag) },
    payload: { tag: 'b' }
  })
  assert.equal(patch.statusCode, 200)
  const del = await app.inject({
    method: 'DELETE',
    url: '/plants/1',
    headers: { ...AUTH, 'if-match': String(patch.headers.etag) }
  })
  assert.equal(del.statusCode, 204)
})
