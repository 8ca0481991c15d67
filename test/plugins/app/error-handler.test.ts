import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { AUTH, buildTestApp } from '../../helpers/app.js'

function assertError (res: LightMyRequestResponse, status: number, message: string | RegExp): void {
  assert.equal(res.statusCode, status)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  const body = res.json()
  assert.deepEqual(Object.keys(body), ['error', 'message'])
  assert.equal(body.error, status)
  if (typeof message === 'string') assert.equal(body.message, message)
  else assert.match(body.message, message)
}

test('validation errors are 400 in the Error shape', async (t) => {
  const app = await buildTestApp(t)
  assertError(await app.inject({ method: 'DELETE', url: '/plants/abc', headers: AUTH }), 400,
    'params/id must match format "int64"')
})

test('unknown routes are 404 in the Error shape (a known path with another method: ' +
  'test/plugins/method-not-allowed.test.ts)', async (t) => {
  const app = await buildTestApp(t)
  assertError(await app.inject({ method: 'GET', url: '/nowhere' }), 404, 'Route GET /nowhere not found')
})

test('a malformed URL is 400 in the Error shape', async (t) => {
  const app = await buildTestApp(t)
  assertError(await app.inject({ method: 'DELETE', url: '/plants/%', headers: AUTH }), 400,
    /is not a valid url component/)
})

test('body parser failures are in the Error shape: malformed JSON, empty JSON, 415, 413', async (t) => {
  const app = await buildTestApp(t)
  // On a route that reads a body (DELETE reads none: test/plugins/request-bodies.test.ts).
  const json = { ...AUTH, 'content-type': 'application/json' }
  assertError(await app.inject({ method: 'POST', url: '/plants', headers: json, payload: '{"name": ' }), 400,
    "Body is not valid JSON but content-type is set to 'application/json'")
  assertError(await app.inject({ method: 'POST', url: '/plants', headers: json, payload: '' }), 400,
    "Body cannot be empty when content-type is set to 'application/json'")
  assertError(await app.inject(
    { method: 'POST', url: '/plants', headers: { ...AUTH, 'content-type': 'application/xml' }, payload: '<plant/>' }),
  415, 'Unsupported Media Type')
  assertError(await app.inject(
    { method: 'POST', url: '/plants', headers: json, payload: `{"padding":"${'x'.repeat(2 * 1024 * 1024)}"}` }),
  413, 'Request body is too large')
})

test('an unexpected failure is a generic 500: no stack, SQL text or file path leaves the service', async (t) => {
  const app = await buildTestApp(t)
  app.store.plants.delete = async () => {
    const error = new Error(
      'SQLITE_CORRUPT: database disk image is malformed: DELETE FROM plants WHERE id = ? (/var/lib/plants.db)')
    Object.assign(error, { code: 'SQLITE_CORRUPT', statusCode: 502 })
    throw error
  }
  const res = await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  assertError(res, 500, 'Internal Server Error')
  assert.doesNotMatch(res.body, /SQLITE|DELETE FROM|plants\.db|at /)
})

test('a request the HTTP parser rejects gets a 400 in the Error shape over the socket', async (t) => {
  const app = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  assert.ok(address !== null && typeof address === 'object')
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(address.port, '127.0.0.1')
    let data = ''
    socket.on('data', (chunk) => { data += chunk.toString() })
    socket.on('end', () => resolve(data))
    socket.on('error', reject)
    socket.write('DELETE /plants/1 HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n')
  })
  const [head, body] = raw.split('\r\n\r\n')
  assert.match(head ?? '', /^HTTP\/1\.1 400 Bad Request\r\n/)
  assert.match(head ?? '', /\r\nContent-Type: application\/json; charset=utf-8\r\n/)
  assert.deepEqual(JSON.parse(body ?? ''), { error: 400, message: 'Bad Request' })
})
