import assert from 'node:assert/strict'
import { STATUS_CODES } from 'node:http'
import { connect } from 'node:net'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { TOKEN, buildTestApp } from '../helpers/app.js'
import type { Cleanup } from '../helpers/cleanup.js'

/**
 * Answers that Node's HTTP layer would give by itself, or that come before routing, over a raw
 * socket against a real listening app: every one is in the Error shape, and none echoes a whole URL.
 */

interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

/** Sends raw bytes and reads one response (by its Content-Length, or to the end of the connection). */
async function exchange (port: number, request: string): Promise<RawResponse> {
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let data = Buffer.alloc(0)
    const parse = (complete: boolean): RawResponse | undefined => {
      // Interim answers (100 Continue) come before the final one: skip them.
      while (/^HTTP\/1\.1 1\d\d /.test(data.toString('latin1', 0, 13)) && data.includes('\r\n\r\n')) {
        data = data.subarray(data.indexOf('\r\n\r\n') + 4)
      }
      const end = data.indexOf('\r\n\r\n')
      if (end === -1) return undefined
      const [statusLine = '', ...lines] = data.subarray(0, end).toString('latin1').split('\r\n')
      const headers = Object.fromEntries(lines.map((line) => {
        const colon = line.indexOf(':')
        return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]
      }))
      const body = data.subarray(end + 4)
      const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length'])
      if (length === undefined ? !complete : body.length < length) return undefined
      return { status: Number(statusLine.split(' ')[1]), headers, body: body.subarray(0, length).toString() }
    }
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      const response = parse(false)
      if (response !== undefined) {
        socket.destroy()
        resolve(response)
      }
    })
    socket.on('end', () => {
      const response = parse(true)
      if (response === undefined) reject(new Error(`incomplete response: ${data.toString('latin1').slice(0, 200)}`))
      else resolve(response)
    })
    socket.on('error', reject)
    socket.write(request)
  })
}

function assertRawError (res: RawResponse, status: number, message: string): void {
  assert.equal(res.status, status, res.body)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  assert.deepEqual(JSON.parse(res.body), { error: status, message })
}

async function listening (t: Cleanup): Promise<{ app: FastifyInstance, port: number }> {
  const app = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  assert.ok(address !== null && typeof address === 'object')
  return { app, port: address.port }
}

const AUTH_LINE = `Authorization: Bearer ${TOKEN}\r\n`

test('an HTTP/1.1 request without Host, or with two, is a 400 in the Error shape (HTTP/1.0 needs none)', async (t) => {
  const { port } = await listening(t)
  const missing = await exchange(port, 'GET /health HTTP/1.1\r\n\r\n')
  assertRawError(missing, 400, 'The request must have exactly one Host header')
  assert.equal(missing.headers['x-content-type-options'], 'nosniff')
  assertRawError(await exchange(port, 'GET /health HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n'), 400,
    'The request must have exactly one Host header')
  assertRawError(await exchange(port, 'GET /health HTTP/1.0\r\nHost: a.example\r\nhost: b.example\r\n\r\n'), 400,
    'The request must have exactly one Host header')
  const old = await exchange(port, 'GET /health HTTP/1.0\r\n\r\n')
  assert.equal(old.status, 200)
  assert.deepEqual(JSON.parse(old.body), { status: 'ok' })
})

test('an Expect other than 100-continue is a 417 in the Error shape; 100-continue still works', async (t) => {
  const { port } = await listening(t)
  assertRawError(await exchange(port, 'GET /health HTTP/1.1\r\nHost: x\r\nExpect: 103-checkpoint\r\n\r\n'), 417,
    'Expect: 103-checkpoint is not supported (only 100-continue is)')
  assertRawError(await exchange(port, `GET /health HTTP/1.1\r\nHost: x\r\nExpect: ${'e'.repeat(500)}\r\n\r\n`), 417,
    `Expect: ${'e'.repeat(40)}… is not supported (only 100-continue is)`)
  const body = '{"name":"Fern"}'
  const created = await exchange(port, 'POST /plants HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n' + AUTH_LINE +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
  assert.equal(created.status, 201, created.body)
})

test('a too-long URL or header block is a 431 in the Error shape; an over-long id within the limit is a ' +
  '400 like any invalid id', async (t) => {
  const { port } = await listening(t)
  assertRawError(await exchange(port, `GET /plants/${'1'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`), 431,
    'Request Header Fields Too Large')
  assertRawError(await exchange(port, `GET /health HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`),
    431, 'Request Header Fields Too Large')
  const longId = await exchange(port, `GET /plants/${'9'.repeat(10_000)} HTTP/1.1\r\nHost: x\r\n${AUTH_LINE}\r\n`)
  assertRawError(longId, 400, 'params/id must match format "int64"')
  assertRawError(await exchange(port, `DELETE /plants/-${'1'.repeat(10_000)} HTTP/1.1\r\nHost: x\r\n${AUTH_LINE}\r\n`),
    400,
    'params/id must match format "int64"')
})

test('no error echoes the whole URL: the path is quoted without its query, cut at 100 characters', async (t) => {
  const { port } = await listening(t)
  const path = `/${'x'.repeat(5000)}`
  const notFound = await exchange(port, `GET ${path}?secret=hunter2 HTTP/1.1\r\nHost: x\r\n\r\n`)
  assertRawError(notFound, 404, `Route GET ${path.slice(0, 100)}… not found`)
  const notAllowed = await exchange(port, 'PUT /health?secret=hunter2 HTTP/1.1\r\nHost: x\r\n\r\n')
  assertRawError(notAllowed, 405, 'Method PUT is not allowed on /health (it allows GET, HEAD)')
  const badUrl = `/plants/%${'a'.repeat(5000)}`
  assertRawError(await exchange(port, `DELETE ${badUrl} HTTP/1.1\r\nHost: x\r\n${AUTH_LINE}\r\n`), 400,
    `'${badUrl.slice(0, 100)}…' is not a valid url component`)
})

test('a method the path lacks is a 405 on the wire too, with or without Content-Type or ' +
  'body (QUERY included)', async (t) => {
  const { port } = await listening(t)
  const bare = await exchange(port, 'QUERY /plants HTTP/1.1\r\nHost: x\r\n\r\n')
  assertRawError(bare, 405, 'Method QUERY is not allowed on /plants (it allows GET, HEAD, POST)')
  assert.equal(bare.headers.allow, 'GET, HEAD, POST')
  const chunked = await exchange(port,
    'QUERY /plants HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n')
  assertRawError(chunked, 405, 'Method QUERY is not allowed on /plants (it allows GET, HEAD, POST)')
  assertRawError(await exchange(port, 'QUERY /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}'), 404,
    'Route QUERY /nowhere not found')
})

test('CONNECT, which Node would drop without a word, is a 501 in the Error shape', async (t) => {
  const { port } = await listening(t)
  assertRawError(await exchange(port, 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n'), 501,
    'CONNECT is not supported: this service is not a proxy')
  // A client that resets the connection at once does not take the process down.
  await new Promise<void>((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write('CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n')
      socket.resetAndDestroy()
      resolve()
    })
  })
  const health = await exchange(port, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n')
  assert.equal(health.status, 200)
})

test('parser errors keep the status Node would give: oversized chunk extensions are a 413, a ' +
  'malformed request a 400', async (t) => {
  const { port } = await listening(t)
  assertRawError(await exchange(port, 'POST /plants HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n' +
    `1;${'e'.repeat(20_000)}\r\nx\r\n0\r\n\r\n`), 413, STATUS_CODES[413] ?? '')
  assertRawError(
    await exchange(port, 'GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n'),
    400, 'Bad Request')
})

test('a GET whose framing carries a body (chunked) is a 400 that says so', async (t) => {
  const { port } = await listening(t)
  assertRawError(await exchange(port,
    `GET /plants HTTP/1.1\r\nHost: x\r\n${AUTH_LINE}Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`), 400,
  'GET /plants takes no request body')
})
