import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { test } from 'node:test'
import { median } from '../../bench/measure.js'
import { directUrl, scratchDatabaseUrl, TEST_DATABASE_URL } from '../helpers/postgres.js'
import { startServer } from '../helpers/server-process.js'
import { startReceiver, until, verifyWebhook } from '../helpers/webhook-receiver.js'
import { callOk, subscribe, type EventBody } from '../helpers/webhook-http.js'

test('two instances on one PostgreSQL database: every event delivered, none ' +
  'twice (prints latency)',
{ skip: TEST_DATABASE_URL === undefined && 'TEST_DATABASE_URL is not set', timeout: 120_000 }, async (t) => {
  const { url } = scratchDatabaseUrl(t)
  // The default poll (1 s) on purpose: deliveries start on NOTIFY, not on the poll.
  const env = {
    DATABASE_URL: url,
    DATABASE_DIRECT_URL: directUrl(url),
    PG_POOL_MAX: '4',
    WEBHOOK_ALLOW_PRIVATE_URLS: '1',
    LOG_LEVEL: 'info'
  }
  const [a, b] = await Promise.all([startServer(t, { env }), startServer(t, { env })])
  const receiver = await startReceiver(t)
  const arrivals = new Map<number, number>() // plant id → when its event arrived
  receiver.respond((request, res) => {
    arrivals.set(JSON.parse(request.body).data.id, performance.now())
    res.writeHead(204).end()
  })
  const subscription = await subscribe(a.baseUrl, `${receiver.origin}/hook`)

  const N = 200
  const sent = new Map<number, number>() // plant id → when its create was sent
  let sequence = 0
  await Promise.all(Array.from({ length: 8 }, async (_, worker) => {
    const base = worker % 2 === 0 ? a.baseUrl : b.baseUrl
    while (sequence < N) {
      const started = performance.now()
      const plant = await callOk<{ id: number }>(201, base, 'POST', '/plants', { name: `plant ${sequence++}` })
      sent.set(plant.id, started)
    }
  }))
  await until(`${N} events delivered`, () => receiver.requests.length >= N, 60_000)
  // Anything delivered twice would arrive meanwhile.
  await new Promise((resolve) => setTimeout(resolve, 1500))

  const ids = receiver.requests.map((request) => String(request.headers['webhook-id']))
  assert.equal(new Set(ids).size, ids.length, 'no webhook-id delivered twice')
  assert.equal(ids.length, N)
  const plants = receiver.requests.map(
    (request) => (verifyWebhook(subscription.secret, request) as EventBody).data.id as number)
  assert.deepEqual(plants.sort((x, y) => x - y), [...sent.keys()].sort((x, y) => x - y))

  const latencies = [...sent].map(([id, started]) => (arrivals.get(id) as number) - started)
  t.diagnostic(`PostgreSQL, two instances, ${N} creates from 8 concurrent clients: webhook latency ` +
    '(request sent → receiver) ' +
    `median ${median(latencies).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`)
  // One write at a time, through either instance: the latency of an idle service (LISTEN/NOTIFY, not the 1 s poll).
  const idle: number[] = []
  for (let i = 0; i < 10; i++) {
    const started = performance.now()
    const plant = await callOk<{ id: number }>(201, i % 2 === 0 ? a.baseUrl : b.baseUrl, 'POST', '/plants',
      { name: `idle ${i}` })
    await until(`plant ${plant.id} delivered`, () => arrivals.has(plant.id), 10_000)
    idle.push((arrivals.get(plant.id) as number) - started)
  }
  t.diagnostic(
    'PostgreSQL, two instances, 10 sequential creates: ' +
      `webhook latency median ${median(idle).toFixed(1)} ms, max ${Math.max(...idle).toFixed(1)} ms`)
  // Which instance delivered what is up to the claims: told, not asserted.
  const delivered = (stdout: string): number => stdout.split('\n').filter(
    (line) => line.includes('"msg":"webhook delivered"')).length
  t.diagnostic(`deliveries made by instance A: ${delivered(a.stdout())}, by instance B: ${delivered(b.stdout())}`)
})
