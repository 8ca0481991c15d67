import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH, buildTestApp } from '../helpers/app.js'
import type { Cleanup } from '../helpers/cleanup.js'

test('a body over BODY_LIMIT (16 KiB by default) is refused with 413 in the Error shape', async (t) => {
  const app = await buildTestApp(t)
  assert.equal(app.config.bodyLimit, 16 * 1024)
  await app.store.plants.create({ id: 1n, name: 'Fern' })
  for (const [method, url] of [['POST', '/plants'], ['PUT', '/plants/1'], ['PATCH', '/plants/1'],
    ['DELETE', '/plants/1']] as const) {
    const res = await app.inject({
      method,
      url,
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x'.repeat(16 * 1024) })
    })
    assert.equal(res.statusCode, 413, `${method} ${url}`)
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    assert.deepEqual(res.json(), { error: 413, message: 'Request body is too large' })
  }
  assert.equal((await app.store.plants.get(1n))?.name, 'Fern')

  const small = await buildTestApp(t, { BODY_LIMIT: '10' })
  const refused = await small.inject({
    method: 'DELETE',
    url: '/plants/1',
    headers: { ...AUTH, 'content-type': 'application/json' },
    payload: '{"a":"12345678"}'
  })
  assert.equal(refused.statusCode, 413)
})

async function listen (t: Cleanup, env: NodeJS.ProcessEnv): Promise<{ app: FastifyInstance, port: number }> {
  const app = await buildTestApp(t, env)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  assert.ok(address !== null && typeof address === 'object')
  return { app, port: address.port }
}

/** Everything the server sends on this socket until it closes the connection. */
function untilClosed (socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = ''
    socket.on('data', (chunk: Buffer) => { received += chunk.toString() })
    socket.on('error', reject)
    socket.on('close', () => resolve(received))
  })
}

function open (port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket))
    socket.on('error', reject)
  })
}

test('slowloris: a client dribbling its headers is cut off with 408 once ' +
  'HEADERS_TIMEOUT_MS passes', { timeout: 10_000 }, async (t) => {
  const { port } = await listen(t, { HEADERS_TIMEOUT_MS: '300' })
  const socket = await open(port)
  const closed = untilClosed(socket)
  socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n')
  // A new header line every 50 ms keeps the socket busy but never finishes the request.
  const drip = setInterval(() => { if (socket.writable) socket.write('X-Slow: 1\r\n') }, 50)
  t.after(() => { clearInterval(drip); socket.destroy() })
  const received = await closed
  clearInterval(drip)
  assert.match(received, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  assert.ok(received.endsWith('{"error":408,"message":"Request Timeout"}'))
})

test('a client dribbling its body is cut off with 408 once ' +
  'REQUEST_TIMEOUT_MS passes', { timeout: 10_000 }, async (t) => {
  const { port } = await listen(t, { HEADERS_TIMEOUT_MS: '200', REQUEST_TIMEOUT_MS: '400' })
  const socket = await open(port)
  const closed = untilClosed(socket)
  socket.write(
    `DELETE /plants/1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${AUTH.authorization}\r\nContent-Type: ` +
      'application/json\r\nContent-Length: 1000\r\n\r\n')
  const drip = setInterval(() => { if (socket.writable) socket.write(' ') }, 50)
  t.after(() => { clearInterval(drip); socket.destroy() })
  const received = await closed
  clearInterval(drip)
  assert.match(received, /^HTTP\/1\.1 408 /)
  assert.match(received, /\{"error":408,"message":"[^"]+"\}$/)
})

test('an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS', { timeout: 10_000 }, async (t) => {
  const { port } = await listen(t, { KEEP_ALIVE_TIMEOUT_MS: '200' })
  const socket = await open(port)
  t.after(() => { socket.destroy() })
  const closed = untilClosed(socket)
  socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n')
  // Closed by the server (the default would keep it 72 s, past the test's timeout).
  assert.match(await closed, /^HTTP\/1\.1 200 OK\r\n/)
})

test('a connection serves at most MAX_REQUESTS_PER_SOCKET requests; a ' +
  'request past it is not run', { timeout: 10_000 }, async (t) => {
  const { app, port } = await listen(t, { MAX_REQUESTS_PER_SOCKET: '2' })
  for (const id of [1n, 2n, 3n]) await app.store.plants.create({ id, name: 'Fern' })
  const socket = await open(port)
  t.after(() => { socket.destroy() })
  const closed = untilClosed(socket)
  // Three pipelined deletes: two answered, the second with `Connection: close`; the third, sent
  // regardless, is refused before it runs (its answer cannot reach a closed connection).
  const request = (id: number): string => `DELETE /plants/${id} HTTP/1.1\r\nHost: ` +
    `localhost\r\nAuthorization: ${AUTH.authorization}\r\n\r\n`
  socket.write(request(1) + request(2) + request(3))
  const responses = (await closed).split(/(?=HTTP\/1\.1 )/)
  assert.equal(responses.length, 2)
  assert.match(responses[0] ?? '', /^HTTP\/1\.1 204 [^]*\r\nConnection: keep-alive\r\n/i)
  assert.match(responses[1] ?? '', /^HTTP\/1\.1 204 [^]*\r\nConnection: close\r\n/i)
  assert.equal(await app.store.plants.get(2n), undefined)
  assert.ok(await app.store.plants.get(3n), 'the request past the limit was not run')
})
