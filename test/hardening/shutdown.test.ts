import assert from 'node:assert/strict'
import { existsSync, statSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { connect, type Socket } from 'node:net'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { AUTH } from '../helpers/app.js'
import { tempDatabaseFile } from '../helpers/cleanup.js'
import { startServer, type ServerProcess } from '../helpers/server-process.js'

/** A create; resolves with the status, or 0 when the connection died without an answer. */
function create (agent: Agent, port: number, name: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({
      agent,
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/plants',
      headers: { ...AUTH, 'content-type': 'application/json' }
    }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
      res.on('error', () => resolve(0))
    })
    req.on('error', () => resolve(0))
    req.end(JSON.stringify({ name }))
  })
}

function open (port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket))
    socket.on('error', reject)
  })
}

function untilClosed (socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let received = ''
    socket.on('data', (chunk: Buffer) => { received += chunk.toString() })
    socket.on('error', () => undefined)
    socket.on('close', () => resolve(received))
  })
}

/** Sends a PUT's headers and half its body: the request is accepted and waits for the rest. */
async function startSlowReplace (server: ServerProcess, id: number,
  body: string): Promise<{ socket: Socket, answer: Promise<string>, finish: () => void }> {
  const socket = await open(server.port)
  const answer = untilClosed(socket)
  socket.write(`PUT /plants/${id} HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${AUTH.authorization}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 5)}`)
  await server.waitForLog(
    (line) => line.msg === 'incoming request' && line.req?.method === 'PUT' && line.req.url === `/plants/${id}`)
  return { socket, answer, finish: () => { socket.write(body.slice(5)) } }
}

test('SIGTERM under load: accepted requests finish, later ones get 503 or no connection, none is dropped; the ' +
  'database is checkpointed', { timeout: 30_000 }, async (t) => {
  const file = tempDatabaseFile(t, 'plant-store-shutdown-')
  const server = await startServer(t, { env: { DATABASE_URL: file, LOG_LEVEL: 'debug' } })
  const agent = new Agent({ keepAlive: true, maxSockets: 8 })
  assert.equal(await create(agent, server.port, 'seed'), 201)

  // Load: creates with unique names, until the server is gone.
  const outcomes = new Map<string, number>()
  let stopped = false
  let sequence = 0
  const worker = async (): Promise<void> => {
    // `stopped` is set by the test while the workers await their requests.
    // eslint-disable-next-line no-unmodified-loop-condition
    while (!stopped) {
      const name = `load-${sequence++}`
      const status = await create(agent, server.port, name)
      outcomes.set(name, status)
      if (status === 0) return
    }
  }
  const load = Promise.all(Array.from({ length: 8 }, worker))
  while (outcomes.size < 40) await new Promise((resolve) => setImmediate(resolve))

  // An in-flight request: accepted before the signal, its body still on the way.
  const body = JSON.stringify({ name: 'replaced during shutdown' })
  const slow = await startSlowReplace(server, 1, body)
  server.child.kill('SIGTERM')
  await server.waitForLog((line) => line.msg === 'shutting down: finishing in-flight requests')
  slow.finish()
  const answer = await slow.answer
  assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/)
  assert.match(answer, /\r\nconnection: close\r\n/i, 'a keep-alive client is told not to reuse the connection')
  assert.match(answer, /"name":"replaced during shutdown"/)

  assert.equal(await server.exited, 0)
  stopped = true
  await load
  agent.destroy()

  // Checkpointed and closed: one self-contained file, intact.
  assert.equal(existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0, 0)
  const db = new Database(file, { readonly: true })
  assert.equal(db.pragma('integrity_check', { simple: true }), 'ok')
  const names = new Set(db.prepare('SELECT name FROM plants').pluck().all() as string[])
  db.close()
  assert.ok(names.has('replaced during shutdown'))
  const statuses = new Set(outcomes.values())
  for (const [name, status] of outcomes) {
    // 201: written. 503: refused while draining, never run. 0: never reached the service.
    assert.ok([201, 503, 0].includes(status), `${name}: ${status}`)
    assert.equal(names.has(name), status === 201,
      `${name} answered ${status} but is ${names.has(name) ? '' : 'not '}in the database`)
  }
  assert.ok(statuses.has(201))
})

test('past SHUTDOWN_GRACE_MS the connections left are cut and the ' +
  'service still stops cleanly', { timeout: 10_000 }, async (t) => {
  const file = tempDatabaseFile(t, 'plant-store-shutdown-')
  const server = await startServer(t,
    { env: { DATABASE_URL: file, LOG_LEVEL: 'debug', SHUTDOWN_GRACE_MS: '300', REQUEST_TIMEOUT_MS: '60000' } })
  const agent = new Agent({ keepAlive: true })
  assert.equal(await create(agent, server.port, 'seed'), 201)
  agent.destroy()
  // This client never sends the rest of its body; without the grace period the service would
  // wait for it until REQUEST_TIMEOUT_MS (a minute).
  const slow = await startSlowReplace(server, 1, JSON.stringify({ name: 'never finished' }))
  server.child.kill('SIGTERM')
  await server.waitForLog((line) => line.msg === 'shutdown grace period over: closing the connections left')
  assert.equal(await server.exited, 0)
  assert.equal(await slow.answer, '')
  const db = new Database(file, { readonly: true })
  assert.deepEqual(db.prepare('SELECT name FROM plants').pluck().all(), ['seed'])
  db.close()
})

test('idle keep-alive connections do not hold up a shutdown', { timeout: 10_000 }, async (t) => {
  const server = await startServer(t, { env: { LOG_LEVEL: 'debug' } })
  const socket = await open(server.port)
  const closed = untilClosed(socket)
  socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n')
  await server.waitForLog((line) => line.msg === 'request completed')
  // Kept alive for 72 s by default; the shutdown closes it at once instead.
  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)
  assert.match(await closed, /^HTTP\/1\.1 200 OK\r\n/)
})
