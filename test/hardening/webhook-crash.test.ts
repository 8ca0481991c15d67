import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { tempDatabaseFile } from '../helpers/cleanup.js'
import { scratchDatabaseUrl, TEST_DATABASE_URL } from '../helpers/postgres.js'
import { startServer } from '../helpers/server-process.js'
import { startReceiver, until, verifyWebhook } from '../helpers/webhook-receiver.js'
import { callOk, deliveries, subscribe, untilDeliveries, type EventBody } from '../helpers/webhook-http.js'

/** Retries every 300 ms (± 20 %) for about 15 s: long enough to outlast a restart, short enough to retry promptly. */
const RETRY_EVERY_300_MS = Array.from({ length: 50 }, () => '300').join(',')

test('SIGKILL right after the writes, receiver down: after a restart every committed event ' +
  'is delivered, promptly', { timeout: 60_000 }, async (t) => {
  const file = tempDatabaseFile(t, 'plant-store-webhook-crash-')
  const env = {
    DATABASE_URL: file,
    WEBHOOK_ALLOW_PRIVATE_URLS: '1',
    WEBHOOK_POLL_INTERVAL_MS: '100',
    WEBHOOK_RETRY_SCHEDULE: RETRY_EVERY_300_MS
  }
  // A port that refuses connections, where the receiver comes back later.
  const down = await startReceiver(t)
  const port = down.port
  await down.close()

  const first = await startServer(t, { env })
  const subscription = await subscribe(first.baseUrl, `http://127.0.0.1:${port}/hook`)
  const created: number[] = []
  let sequence = 0
  const N = 40
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (sequence < N) {
      const plant = await callOk<{ id: number }>(201, first.baseUrl, 'POST', '/plants', { name: `plant ${sequence++}` })
      created.push(plant.id)
    }
  }))
  first.child.kill('SIGKILL')
  assert.equal(await first.exited, null, 'killed by the signal')
  assert.equal(created.length, N)

  const receiver = await startReceiver(t, port)
  const restarted = performance.now()
  const second = await startServer(t, { env })
  const distinct = (): Set<string> => new Set(receiver.requests.map((request) => String(request.headers['webhook-id'])))
  // Promptly: a delivery the killed process was attempting is not held until its lease runs out (70 s).
  await until(`all ${N} events delivered`, () => distinct().size >= N, 30_000)
  t.diagnostic(`${N} events delivered ${(performance.now() - restarted).toFixed(0)} ms after the restart began; ` +
    `${receiver.requests.length - N} delivered more than once`)

  const plantIds = new Map<string, number>()
  for (const request of receiver.requests) {
    const event = verifyWebhook(subscription.secret, request) as EventBody
    assert.equal(event.type, 'plant.created')
    const id = String(request.headers['webhook-id'])
    // A redelivery carries the same event under the same webhook-id.
    assert.equal(plantIds.get(id) ?? event.data.id, event.data.id)
    plantIds.set(id, event.data.id as number)
  }
  assert.deepEqual([...plantIds.values()].sort((a, b) => a - b), created.sort((a, b) => a - b),
    'each committed plant exactly once by webhook-id')
  await untilDeliveries(second.baseUrl, subscription.id, 'every delivery recorded as succeeded',
    (all) => all.length === N && all.every((delivery) => delivery.status === 'succeeded'))
})

test('SIGTERM during a delivery: the attempt in flight finishes within SHUTDOWN_GRACE_MS and is ' +
  'recorded; the process exits 0', { timeout: 60_000 }, async (t) => {
  const file = tempDatabaseFile(t, 'plant-store-webhook-sigterm-')
  const env = { DATABASE_URL: file, WEBHOOK_ALLOW_PRIVATE_URLS: '1', SHUTDOWN_GRACE_MS: '10000' }
  const receiver = await startReceiver(t)
  let answered = 0
  receiver.respond(async (_request, res) => {
    await sleep(1000)
    res.writeHead(204).end(() => { answered++ })
  })
  const server = await startServer(t, { env })
  const subscription = await subscribe(server.baseUrl, `${receiver.origin}/hook`)
  await callOk(201, server.baseUrl, 'POST', '/plants', { name: 'in flight' })
  await receiver.waitFor(1)
  const signalled = performance.now()
  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)
  const stopMs = performance.now() - signalled
  assert.equal(answered, 1, 'the receiver answered before the server exited')
  assert.ok(stopMs < 10_000, `stopped in ${stopMs.toFixed(0)} ms`)
  t.diagnostic(`stopped ${stopMs.toFixed(0)} ms after SIGTERM, the receiver answering after 1000 ms`)

  // The outcome was recorded before the database closed: after a restart it is not sent again.
  receiver.respond((_request, res) => { res.writeHead(204).end() })
  const again = await startServer(t, { env: { ...env, WEBHOOK_POLL_INTERVAL_MS: '100' } })
  const [delivery] = await deliveries(again.baseUrl, subscription.id)
  assert.deepEqual([delivery?.status, delivery?.attempts, delivery?.lastStatusCode], ['succeeded', 1, 204])
  await sleep(500)
  assert.equal(receiver.requests.length, 1, 'delivered once')
})

test('SIGTERM during a delivery slower than SHUTDOWN_GRACE_MS: the attempt is given back untouched and ' +
  'delivered after a restart', { timeout: 60_000 }, async (t) => {
  const file = tempDatabaseFile(t, 'plant-store-webhook-sigterm-')
  const env = {
    DATABASE_URL: file,
    WEBHOOK_ALLOW_PRIVATE_URLS: '1',
    SHUTDOWN_GRACE_MS: '300',
    WEBHOOK_POLL_INTERVAL_MS: '100'
  }
  const receiver = await startReceiver(t)
  receiver.respond(async (_request, res) => {
    // The first request outlasts the grace period; the server is gone before it answers.
    if (receiver.requests.length === 1) await sleep(3000)
    if (!res.destroyed) res.writeHead(204).end()
  })
  const server = await startServer(t, { env })
  const subscription = await subscribe(server.baseUrl, `${receiver.origin}/hook`)
  await callOk(201, server.baseUrl, 'POST', '/plants', { name: 'abandoned' })
  await receiver.waitFor(1)
  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)

  const again = await startServer(t, { env })
  const [first, second] = await receiver.waitFor(2, 10_000)
  assert.equal(second?.headers['webhook-id'], first?.headers['webhook-id'])
  const [delivery] = await untilDeliveries(again.baseUrl, subscription.id, 'delivered after the restart',
    (all) => all[0]?.status === 'succeeded')
  // The abandoned attempt never counted: it was released, not recorded as a failure.
  assert.deepEqual([delivery?.attempts, delivery?.lastStatusCode], [1, 204])
})

test('PostgreSQL, SIGKILL with attempts in flight: the dead instance\'s claims lapse within seconds, and every event ' +
  'is delivered within 15 s of the restart',
{ timeout: 90_000, skip: TEST_DATABASE_URL === undefined && 'no TEST_DATABASE_URL' }, async (t) => {
  const env = {
    DATABASE_URL: scratchDatabaseUrl(t).url,
    WEBHOOK_ALLOW_PRIVATE_URLS: '1',
    WEBHOOK_POLL_INTERVAL_MS: '100',
    WEBHOOK_RETRY_SCHEDULE: RETRY_EVERY_300_MS
  }
  // A receiver that never answers: when the process dies, its attempts are in flight, their deliveries claimed.
  const hanging = await startReceiver(t)
  hanging.respond(() => {})
  const port = hanging.port
  const first = await startServer(t, { env })
  const subscription = await subscribe(first.baseUrl, `http://127.0.0.1:${port}/hook`)
  const created: number[] = []
  for (let i = 0; i < 12; i++) {
    created.push((await callOk<{ id: number }>(201, first.baseUrl, 'POST', '/plants', { name: `plant ${i}` })).id)
  }
  await hanging.waitFor(2)
  first.child.kill('SIGKILL')
  assert.equal(await first.exited, null, 'killed by the signal')
  await hanging.close()

  const receiver = await startReceiver(t, port)
  const restarted = performance.now()
  await startServer(t, { env })
  const distinct = (): Set<string> => new Set(receiver.requests.map((request) => String(request.headers['webhook-id'])))
  // Without a heartbeat, the claimed deliveries would wait for a lease of WEBHOOK_TIMEOUT_MS + 60 s.
  await until(`all ${created.length} events delivered`, () => distinct().size >= created.length, 15_000)
  t.diagnostic(
    `${created.length} events delivered ${(performance.now() - restarted).toFixed(0)} ms after the restart began`)
  const delivered = receiver.requests.map(
    (request) => (verifyWebhook(subscription.secret, request) as EventBody).data.id as number)
  assert.deepEqual([...new Set(delivered)].sort((a, b) => a - b), created.sort((a, b) => a - b))
})
