import assert from 'node:assert/strict'
import { createServer, request as httpRequest, type ClientRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createServer as createTlsServer } from 'node:tls'
import { describe, test } from 'node:test'
import {
  attemptDelivery, createConnectionPool, MAX_SOCKETS_PER_TARGET, type AttemptRequest,
  type RequestFunction
} from '../../../src/webhooks/deliver.js'
import { checkWebhookUrl, type AddressPolicy, type ResolvedAddress } from '../../../src/webhooks/url-policy.js'
import { startReceiver } from '../../helpers/webhook-receiver.js'

// Every connection here goes to 127.0.0.1. Host names resolve through a fake resolver, never DNS.

const loopbackOnly: AddressPolicy = {
  allowPrivate: true,
  resolve: async () => { throw new Error('no host names in this test') }
}

/** A policy whose resolver answers `answers` in turn (the last one from then on), counting calls. */
function resolving (allowPrivate: boolean, ...answers: string[][]): AddressPolicy & { calls: string[] } {
  const calls: string[] = []
  return {
    allowPrivate,
    calls,
    resolve: async (hostname): Promise<ResolvedAddress[]> => {
      calls.push(hostname)
      const answer = answers[Math.min(calls.length, answers.length) - 1] ?? []
      return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
    }
  }
}

/** http.request that records every call: proof that a refused URL never got as far as a socket. */
function recordingRequest (): RequestFunction & { calls: URL[] } {
  const calls: URL[] = []
  const request = (url: URL, options: Parameters<RequestFunction>[1]): ClientRequest => {
    calls.push(url)
    return httpRequest(url, options)
  }
  return Object.assign(request, { calls })
}

const message = (url: string): AttemptRequest => ({
  url,
  body: '{"type":"plant.created"}',
  headers: { 'content-type': 'application/json', 'user-agent': 'plant-store/test', 'webhook-id': 'msg_1' }
})

describe('one delivery attempt', () => {
  test('POSTs the body with the headers given; a 2xx answer is a response with its status', async (t) => {
    const receiver = await startReceiver(t)
    const result = await attemptDelivery(message(`${receiver.origin}/hooks?x=1`),
      { policy: loopbackOnly, timeoutMs: 2000 })
    assert.deepEqual(result, { kind: 'response', statusCode: 204, body: '' })
    const [request] = receiver.requests
    assert.equal(request?.method, 'POST')
    assert.equal(request?.url, '/hooks?x=1')
    assert.equal(request?.body, '{"type":"plant.created"}')
    assert.equal(request?.headers['content-type'], 'application/json')
    assert.equal(request?.headers['content-length'], '24')
    assert.equal(request?.headers['user-agent'], 'plant-store/test')
    assert.equal(request?.headers['webhook-id'], 'msg_1')
  })

  test('any other status is a response too; the caller judges it', async (t) => {
    const receiver = await startReceiver(t)
    for (const status of [500, 410, 404, 429]) {
      receiver.respond((_request, res) => { res.writeHead(status).end('nope') })
      assert.deepEqual(await attemptDelivery(message(receiver.origin), { policy: loopbackOnly, timeoutMs: 2000 }),
        { kind: 'response', statusCode: status, body: 'nope' })
    }
  })

  test('a redirect is never followed', async (t) => {
    const receiver = await startReceiver(t)
    receiver.respond((request, res) => {
      if (request.url === '/start') res.writeHead(307, { location: `${receiver.origin}/elsewhere` }).end()
      else res.writeHead(200).end()
    })
    assert.deepEqual(
      await attemptDelivery(message(`${receiver.origin}/start`), { policy: loopbackOnly, timeoutMs: 2000 }),
      { kind: 'response', statusCode: 307, body: '' })
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.deepEqual(receiver.requests.map((request) => request.url), ['/start'])
  })

  test('no answer within the time limit is a timeout', async (t) => {
    const receiver = await startReceiver(t)
    receiver.respond(() => {}) // never answers
    const started = Date.now()
    const result = await attemptDelivery(message(receiver.origin), { policy: loopbackOnly, timeoutMs: 150 })
    assert.deepEqual(result, { kind: 'error', reason: 'timeout', message: 'no answer within 150 ms' })
    assert.ok(Date.now() - started < 1000)
  })

  test('a resolver that never answers is a timeout too', async () => {
    const policy: AddressPolicy = { allowPrivate: true, resolve: async () => await new Promise(() => {}) }
    const result = await attemptDelivery(message('http://stuck.example.com/'), { policy, timeoutMs: 100 })
    assert.equal(result.kind === 'error' && result.reason, 'timeout')
  })

  test('a refused connection is a connection error', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const { port } = closed.address() as AddressInfo
    await new Promise((resolve) => closed.close(resolve))
    const result = await attemptDelivery(message(`http://127.0.0.1:${port}/`),
      { policy: loopbackOnly, timeoutMs: 2000 })
    assert.equal(result.kind, 'error')
    assert.equal(result.kind === 'error' && result.reason, 'connection')
    assert.match(result.kind === 'error' ? result.message : '', /ECONNREFUSED/)
  })

  test('at most a few KiB of the answer are read: an endless body does not hold the attempt', async (t) => {
    const receiver = await startReceiver(t)
    let written = 0
    let closedEarly = false
    receiver.respond((_request, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      const chunk = Buffer.alloc(1024, 'x')
      const pump = (): void => {
        while (!res.destroyed && written < 50 * 1024 * 1024 && res.write(chunk)) written += chunk.length
        if (!res.destroyed && written < 50 * 1024 * 1024) res.once('drain', pump)
      }
      res.on('close', () => { closedEarly = written < 50 * 1024 * 1024 })
      pump()
    })
    const result = await attemptDelivery(message(receiver.origin), {
      policy: loopbackOnly,
      timeoutMs: 5000,
      maxResponseBytes: 4096
    })
    assert.deepEqual(result, { kind: 'response', statusCode: 200, body: 'x'.repeat(1024) }, 'the first KiB kept')
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.equal(closedEarly, true, 'the connection was closed long before the body ended')
  })

  test('a host name connects to exactly the address the policy checked, with the name kept in Host', async (t) => {
    const receiver = await startReceiver(t)
    // .invalid never resolves through DNS: only the pinned address can have been used.
    const policy = resolving(true, ['127.0.0.1'])
    const result = await attemptDelivery(message(`http://receiver.invalid:${receiver.port}/hook`),
      { policy, timeoutMs: 2000 })
    assert.deepEqual(result, { kind: 'response', statusCode: 204, body: '' })
    assert.deepEqual(policy.calls, ['receiver.invalid'], 'resolved once, by the policy, not again by http')
    assert.equal(receiver.requests[0]?.headers.host, `receiver.invalid:${receiver.port}`)
    assert.equal(receiver.requests[0]?.localAddress, '127.0.0.1')
  })

  test('https: the socket goes to the pinned address while TLS names the URL\'s host (SNI)', async (t) => {
    const serverNames: string[] = []
    // No certificate needed: the server name arrives in the ClientHello, before any is chosen.
    const server = createTlsServer(
      { SNICallback: (name, done) => { serverNames.push(name); done(new Error('no certificate here')) } })
    server.on('tlsClientError', () => {})
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.after(() => { server.close() })
    const { port } = server.address() as AddressInfo
    const policy = resolving(true, ['127.0.0.1'])
    const result = await attemptDelivery(message(`https://receiver.invalid:${port}/hook`), { policy, timeoutMs: 2000 })
    assert.equal(result.kind === 'error' && result.reason, 'connection')
    assert.deepEqual(serverNames, ['receiver.invalid'])
    assert.deepEqual(policy.calls, ['receiver.invalid'])
  })
})

describe('no SSRF: refused before any connection', () => {
  test('a private or loopback literal is refused without a request being made', async (t) => {
    const receiver = await startReceiver(t)
    const request = recordingRequest()
    const policy = resolving(false)
    for (const url of [receiver.origin, `http://[::1]:${receiver.port}/`, `http://[::ffff:127.0.0.1]:${receiver.port}/`,
      `http://2130706433:${receiver.port}/`, 'http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/',
      'http://[fd00::1]/']) {
      const result = await attemptDelivery(message(url), { policy, timeoutMs: 2000, request })
      assert.equal(result.kind === 'error' && result.reason, 'url-not-allowed', url)
    }
    assert.deepEqual(request.calls, [])
    assert.deepEqual(receiver.requests, [])
  })

  test('a name resolving to a private address is refused without a request being made', async () => {
    const request = recordingRequest()
    const policy = resolving(false, ['93.184.216.34', '10.1.2.3'])
    const result = await attemptDelivery(message('https://hooks.example.com/'), { policy, timeoutMs: 2000, request })
    assert.deepEqual(result, {
      kind: 'error',
      reason: 'url-not-allowed',
      message: 'The webhook host hooks.example.com is not allowed: it must resolve to public addresses only'
    })
    assert.deepEqual(request.calls, [])
  })

  test('DNS rebinding: public when the subscription was checked, loopback at ' +
    'delivery: refused at delivery', async (t) => {
    const receiver = await startReceiver(t)
    const request = recordingRequest()
    const policy = resolving(false, ['93.184.216.34'], ['127.0.0.1'])
    await checkWebhookUrl(`http://rebind.example.com:${receiver.port}/`, policy, { timeoutMs: 2000 })
    const result = await attemptDelivery(message(`http://rebind.example.com:${receiver.port}/`),
      { policy, timeoutMs: 2000, request })
    assert.equal(result.kind === 'error' && result.reason, 'url-not-allowed')
    assert.deepEqual(policy.calls, ['rebind.example.com', 'rebind.example.com'])
    assert.deepEqual(request.calls, [])
    assert.deepEqual(receiver.requests, [])
  })

  test('an unresolvable host and an invalid stored URL are failures of their own', async () => {
    const request = recordingRequest()
    const unresolvable = await attemptDelivery(message('https://gone.example.com/'),
      { policy: resolving(false, []), timeoutMs: 2000, request })
    assert.equal(unresolvable.kind === 'error' && unresolvable.reason, 'url-unresolvable')
    const invalid = await attemptDelivery(message('ftp://example.com/'),
      { policy: resolving(false), timeoutMs: 2000, request })
    assert.equal(invalid.kind === 'error' && invalid.reason, 'invalid-url')
    assert.deepEqual(request.calls, [])
  })

  test('an abort (a stop past its grace period) ends the attempt as aborted', async (t) => {
    const receiver = await startReceiver(t)
    receiver.respond(() => {})
    const controller = new AbortController()
    const attempt = attemptDelivery(message(receiver.origin), {
      policy: loopbackOnly,
      timeoutMs: 5000,
      signal: controller.signal
    })
    await receiver.waitFor(1)
    controller.abort()
    assert.deepEqual(await attempt, {
      kind: 'error',
      reason: 'aborted',
      message: 'the attempt was abandoned (stopping)'
    })
  })
})

describe('kept-alive connections (the dispatcher\'s pool)', () => {
  /**
   * A receiver on 127.0.0.1 counting the connections it accepts; `drop` destroys a reused connection at its next
   * request.
   */
  async function countingReceiver (t: { after: (fn: () => Promise<void>) => void },
    drop = false): Promise<{ origin: string, connections: () => number, requests: () => number }> {
    let connections = 0
    let requests = 0
    const server = createServer((req, res) => {
      requests++
      const socket = req.socket as typeof req.socket & { served?: number }
      socket.served = (socket.served ?? 0) + 1
      if (drop && socket.served > 1) {
        socket.destroy()
        return
      }
      req.resume()
      req.on('end', () => { res.writeHead(204).end() })
    })
    server.on('connection', () => { connections++ })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.after(async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    })
    return {
      origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      connections: () => connections,
      requests: () => requests
    }
  }

  test('attempts to the same receiver reuse one connection; without a pool each attempt connects anew', async (t) => {
    const receiver = await countingReceiver(t)
    const pool = createConnectionPool()
    t.after(() => { pool.close() })
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(
        await attemptDelivery(message(`${receiver.origin}/hooks`), { policy: loopbackOnly, timeoutMs: 2000, pool }),
        { kind: 'response', statusCode: 204, body: '' })
    }
    assert.equal(receiver.connections(), 1)
    for (let i = 0; i < 2; i++) {
      await attemptDelivery(message(`${receiver.origin}/hooks`), { policy: loopbackOnly, timeoutMs: 2000 })
    }
    assert.equal(receiver.connections(), 3)
  })

  test('connections to one receiver are bounded: attempts beyond MAX_SOCKETS_PER_TARGET wait for one', async (t) => {
    const receiver = await countingReceiver(t)
    const pool = createConnectionPool()
    t.after(() => { pool.close() })
    const attempts = Array.from({ length: MAX_SOCKETS_PER_TARGET + 8 }, async () =>
      await attemptDelivery(message(`${receiver.origin}/hooks`), { policy: loopbackOnly, timeoutMs: 5000, pool }))
    for (const result of await Promise.all(attempts)) {
      assert.deepEqual(result, { kind: 'response', statusCode: 204, body: '' })
    }
    assert.equal(receiver.requests(), MAX_SOCKETS_PER_TARGET + 8)
    assert.equal(receiver.connections(), MAX_SOCKETS_PER_TARGET)
  })

  test('bursts of attempts reuse the connections of the bursts before: ten bursts, never more than ' +
    'MAX_SOCKETS_PER_TARGET connections', async (t) => {
    const receiver = await countingReceiver(t)
    const pool = createConnectionPool()
    t.after(() => { pool.close() })
    const bursts = 10
    for (let burst = 0; burst < bursts; burst++) {
      const attempts = Array.from({ length: MAX_SOCKETS_PER_TARGET }, async () =>
        await attemptDelivery(message(`${receiver.origin}/hooks`), { policy: loopbackOnly, timeoutMs: 5000, pool }))
      for (const result of await Promise.all(attempts)) {
        assert.deepEqual(result, { kind: 'response', statusCode: 204, body: '' })
      }
    }
    assert.equal(receiver.requests(), bursts * MAX_SOCKETS_PER_TARGET)
    // Idle connections are kept between bursts, not closed and opened again.
    assert.ok(receiver.connections() <= MAX_SOCKETS_PER_TARGET, `${receiver.connections()} connections`)
  })

  test('a pooled connection the receiver dropped is not a failure: the attempt is sent ' +
    'again on a fresh one', async (t) => {
    const receiver = await countingReceiver(t, true)
    const pool = createConnectionPool()
    t.after(() => { pool.close() })
    assert.deepEqual(
      await attemptDelivery(message(`${receiver.origin}/hooks`), { policy: loopbackOnly, timeoutMs: 2000, pool }),
      { kind: 'response', statusCode: 204, body: '' })
    assert.deepEqual(
      await attemptDelivery(message(`${receiver.origin}/hooks`), { policy: loopbackOnly, timeoutMs: 2000, pool }),
      { kind: 'response', statusCode: 204, body: '' })
    assert.equal(receiver.requests(), 3,
      'the second attempt met the dropped connection, then went through on a new one')
    assert.equal(receiver.connections(), 2)
  })

  test('a connection is reused only for the address that was checked: the same host resolving ' +
    'elsewhere connects anew', async (t) => {
    const receiver = await countingReceiver(t)
    const port = new URL(receiver.origin).port
    // receiver.test resolves to 127.0.0.1, then to ::1.
    const policy = resolving(true, ['127.0.0.1'], ['::1'])
    const pool = createConnectionPool()
    t.after(() => { pool.close() })
    await attemptDelivery(message(`http://receiver.test:${port}/hooks`), { policy, timeoutMs: 2000, pool })
    const second = await attemptDelivery(message(`http://receiver.test:${port}/hooks`),
      { policy, timeoutMs: 2000, pool })
    // The receiver listens on 127.0.0.1 only: ::1 is refused, never served over the pooled socket.
    assert.equal(second.kind, 'error')
    assert.equal(receiver.requests(), 1)
  })
})
