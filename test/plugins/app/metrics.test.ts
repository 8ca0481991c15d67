import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH, buildTestApp } from '../../helpers/app.js'
import { checkoutCommit, PACKAGE_VERSION } from '../../helpers/build-info.js'
import { scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'

const metricsUrl = (app: FastifyInstance): string => {
  const address = app.metrics?.address()
  assert.ok(address)
  return `http://127.0.0.1:${address.port}/metrics`
}

async function scrape (app: FastifyInstance): Promise<string> {
  const res = await fetch(metricsUrl(app))
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8')
  return await res.text()
}

/** The value of one sample line, e.g. `http_request_duration_seconds_count{method="GET",...}`. */
function sample (text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`)
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match?.[1] !== name) continue
    const have = (match[2] ?? '').split(',').filter((pair) => pair !== '')
    if (wanted.every((pair) => have.includes(pair)) && have.length === wanted.length) return Number(match[3])
  }
  return undefined
}

/** `promtool check metrics` over a scrape: no complaint (CI installs it: Debian package prometheus). */
function promtoolCheck (t: { diagnostic: (message: string) => void }, text: string): void {
  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' })
  if (promtool.error !== undefined) {
    t.diagnostic('promtool not installed (Debian package prometheus): its check was skipped')
    return
  }
  assert.equal(promtool.status, 0, `${promtool.stdout}${promtool.stderr}`)
  assert.equal(promtool.stdout + promtool.stderr, '')
}

test('without METRICS_PORT nothing is measured or served: no app.metrics, and the API port has ' +
  'no /metrics', async (t) => {
  const app = await buildTestApp(t)
  assert.equal(app.metrics, undefined)
  const res = await app.inject({ url: '/metrics' })
  assert.equal(res.statusCode, 404)
})

test('with METRICS_PORT, GET /metrics on its own listener serves the Prometheus text format; ' +
  'the API port still has none', async (t) => {
  const app = await buildTestApp(t, { METRICS_PORT: '0' })
  const text = await scrape(app)
  assert.match(text, /^# HELP http_request_duration_seconds /m)
  assert.match(text, /^# TYPE http_request_duration_seconds histogram$/m)
  // prom-client's default process and runtime metrics.
  for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds',
    'nodejs_heap_size_used_bytes']) {
    assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name)
  }
  // Which build runs: the package version and the commit this checkout's build/ came from, asked of git here.
  const build = { version: PACKAGE_VERSION, commit: checkoutCommit(), node_version: process.version }
  assert.equal(sample(text, 'plantstore_build_info', build), 1)
  assert.equal(sample(text, 'plantstore_schema_version', {}), app.store.migration.version)
  assert.ok(app.store.migration.version > 0)
  assert.equal((await app.inject({ url: '/metrics' })).statusCode, 404)

  const base = metricsUrl(app)
  const head = await fetch(base, { method: 'HEAD' })
  assert.equal(head.status, 200)
  assert.equal(await head.text(), '')
  const post = await fetch(base, { method: 'POST' })
  assert.equal(post.status, 405)
  assert.equal(post.headers.get('allow'), 'GET, HEAD')
  assert.equal(post.headers.get('content-type'), 'application/json; charset=utf-8')
  assert.deepEqual(await post.json(), {
    error: 405,
    message: 'Method POST is not allowed on /metrics (it allows GET, HEAD)'
  })
  const missing = await fetch(base.replace('/metrics', '/'))
  assert.equal(missing.status, 404)
  assert.deepEqual(await missing.json(), { error: 404, message: 'Not found: metrics are at /metrics' })
})

/** Writes `text` on a raw connection to the metrics listener; resolves with all it answers once it closes. */
async function raw (app: FastifyInstance, text: string): Promise<string> {
  const socket = connect(Number(new URL(metricsUrl(app)).port), '127.0.0.1')
  let answer = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => { answer += chunk })
  socket.write(text)
  await once(socket, 'close')
  return answer
}

test('the metrics listener answers malformed requests in the Error shape and keeps the API\'s ' +
  'slow-client deadlines', { timeout: 20_000 }, async (t) => {
  const app = await buildTestApp(t, { METRICS_PORT: '0', HEADERS_TIMEOUT_MS: '300', REQUEST_TIMEOUT_MS: '300' })
  const garbage = await raw(app, 'NOT A REQUEST\r\n\r\n')
  assert.match(garbage, /^HTTP\/1\.1 400 Bad Request\r\nContent-Type: application\/json; charset=utf-8\r\n/)
  assert.equal(garbage.split('\r\n\r\n')[1], '{"error":400,"message":"Bad Request"}')
  // Headers that never end: the connection is answered 408 and closed at HEADERS_TIMEOUT_MS, as on the API port.
  const slow = await raw(app, 'GET /metrics HTTP/1.1\r\nHost: x\r\n')
  assert.match(slow, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  assert.equal(slow.split('\r\n\r\n')[1], '{"error":408,"message":"Request Timeout"}')
})

test('promtool\'s rule: no gauge is named _total (that suffix is a counter\'s); promtool check metrics ' +
  'passes when installed', async (t) => {
  const app = await buildTestApp(t, { METRICS_PORT: '0' })
  await app.inject({ url: '/health' })
  const text = await scrape(app)
  const gaugesTotal = [...text.matchAll(/^# TYPE (\S+_total) gauge$/gm)].map((match) => match[1])
  assert.deepEqual(gaugesTotal, [])
  // Their by-type breakdowns stay.
  assert.match(text, /^# TYPE nodejs_active_handles gauge$/m)
  promtoolCheck(t, text)
})

test('a method a known path lacks (405) is counted under that path\'s route, not with the unknown paths', async (t) => {
  const app = await buildTestApp(t, { METRICS_PORT: '0' })
  assert.equal((await app.inject({ method: 'POST', url: '/plants/1?x=1', headers: AUTH })).statusCode, 405)
  assert.equal((await app.inject({ method: 'DELETE', url: '/plants', headers: AUTH })).statusCode, 405)
  assert.equal((await app.inject({ method: 'POST', url: '/health/live' })).statusCode, 405)
  assert.equal((await app.inject({ method: 'PUT', url: '/no/such/path' })).statusCode, 404)
  const text = await scrape(app)
  const count = (labels: Record<string, string>): number | undefined => sample(text,
    'http_request_duration_seconds_count', labels)
  assert.equal(count({ method: 'POST', route: '/plants/:id', status_code: '405' }), 1)
  assert.equal(count({ method: 'DELETE', route: '/plants', status_code: '405' }), 1)
  assert.equal(count({ method: 'POST', route: '/health/live', status_code: '405' }), 1)
  assert.equal(count({ method: 'PUT', route: 'unmatched', status_code: '404' }), 1)
})

test('http_request_duration_seconds: by method, route template (never the raw URL; unmatched ' +
  'routes as one label) and status', async (t) => {
  const app = await buildTestApp(t, { METRICS_PORT: '0' })
  const created = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'Fern' } })
  assert.equal(created.statusCode, 201)
  await app.inject({ url: '/plants/1', headers: AUTH })
  await app.inject({ url: '/plants/1?fields=all', headers: AUTH })
  await app.inject({ url: '/plants/2', headers: AUTH })
  await app.inject({ url: '/no/such/page/123' })
  await app.inject({ url: '/no/such/page/456' })
  const text = await scrape(app)
  const count = (labels: Record<string, string>): number | undefined => sample(text,
    'http_request_duration_seconds_count', labels)
  assert.equal(count({ method: 'POST', route: '/plants', status_code: '201' }), 1)
  assert.equal(count({ method: 'GET', route: '/plants/:id', status_code: '200' }), 2)
  assert.equal(count({ method: 'GET', route: '/plants/:id', status_code: '404' }), 1)
  assert.equal(count({ method: 'GET', route: 'unmatched', status_code: '404' }), 2)
  assert.doesNotMatch(text, /\/plants\/1"|no\/such/)
  assert.equal(
    sample(text, 'http_request_duration_seconds_bucket',
      { le: '+Inf', method: 'GET', route: '/plants/:id', status_code: '200' }), 2)
})

test('store operations are timed by operation and outcome', async (t) => {
  const app = await buildTestApp(t, { METRICS_PORT: '0' })
  await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'Fern' } })
  await app.inject({ url: '/plants/1', headers: AUTH })
  await app.inject({ url: '/plants', headers: AUTH })
  await app.inject({ method: 'DELETE', url: '/plants/9', headers: AUTH })
  await app.inject({ url: '/webhooks', headers: AUTH })
  const text = await scrape(app)
  const count = (operation: string, outcome: string): number | undefined =>
    sample(text, 'plantstore_store_operation_duration_seconds_count', { operation, outcome })
  assert.equal(count('plants.create', 'ok'), 1)
  assert.equal(count('plants.get', 'ok'), 1)
  assert.equal(count('plants.list', 'ok'), 1)
  assert.equal(count('plants.delete', 'error'), 1)
  assert.equal(count('plants.update', 'ok'), 0)
  assert.equal(count('webhooks.listSubscriptions', 'ok'), 1)
  // The old, unprefixed names are gone.
  assert.equal(count('create', 'ok'), undefined)
})

test('SQLite group commit: batch sizes and WAL fdatasync durations (SQLITE_SYNCHRONOUS=full on a file)', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'plant-store-metrics-')), 'plants.db')
  const app = await buildTestApp(t, { METRICS_PORT: '0', DATABASE_URL: file, SQLITE_SYNCHRONOUS: 'full' })
  // Ten creates in one event-loop turn share one transaction.
  const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => app.store.plants.create({ name: `p${i}` })))
  assert.equal(burst.length, 10)
  await app.store.plants.create({ name: 'alone' })
  const text = await scrape(app)
  assert.equal(sample(text, 'plantstore_sqlite_group_commit_batch_size_count'), 2)
  assert.equal(sample(text, 'plantstore_sqlite_group_commit_batch_size_sum'), 11)
  assert.equal(sample(text, 'plantstore_sqlite_group_commit_batch_size_bucket', { le: '8' }), 1)
  assert.equal(sample(text, 'plantstore_sqlite_group_commit_batch_size_bucket', { le: '16' }), 2)
  const syncs = sample(text, 'plantstore_sqlite_wal_fdatasync_duration_seconds_count') ?? 0
  assert.ok(syncs >= 2, `one fdatasync at least per durable batch, got ${syncs}`)
})

test('SQLite WAL checkpoints are timed by the thread that ran them', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'plant-store-metrics-')), 'plants.db')
  const app = await buildTestApp(t, { METRICS_PORT: '0', DATABASE_URL: file, SQLITE_SYNCHRONOUS: 'normal' })
  await app.store.plants.create({ name: 'Fern' })
  // The checkpoint thread looks at the WAL every 100 ms.
  let text = await scrape(app)
  for (let waited = 0; (sample(text, 'plantstore_sqlite_wal_checkpoint_duration_seconds_count', { thread: 'worker' }) ??
    0) === 0 && waited < 5000; waited += 50) {
    await sleep(50)
    text = await scrape(app)
  }
  assert.ok((sample(text, 'plantstore_sqlite_wal_checkpoint_duration_seconds_count', { thread: 'worker' }) ?? 0) >= 1)
  assert.equal(sample(text, 'plantstore_sqlite_wal_checkpoint_duration_seconds_count', { thread: 'loop' }) ?? 0, 0,
    'a small WAL is never checkpointed on the loop')
})

test('rate-limit rejections are counted by what was limited, a token or an IP', async (t) => {
  const app = await buildTestApp(t, { METRICS_PORT: '0', RATE_LIMIT_MAX: '1' })
  for (let i = 0; i < 3; i++) await app.inject({ url: '/plants', headers: AUTH })
  for (let i = 0; i < 2; i++) await app.inject({ url: '/openapi.json' })
  const text = await scrape(app)
  assert.equal(sample(text, 'plantstore_rate_limit_rejections_total', { client: 'token' }), 2)
  assert.equal(sample(text, 'plantstore_rate_limit_rejections_total', { client: 'ip' }), 1)
})

test('load shedding 503s are counted by reason', async (t) => {
  const app = await buildTestApp(t, { METRICS_PORT: '0', MAX_HEAP_USED_BYTES: '1' })
  for (let waited = 0; !app.isUnderPressure() && waited < 100; waited++) await sleep(50)
  for (let i = 0; i < 3; i++) assert.equal((await app.inject({ url: '/plants', headers: AUTH })).statusCode, 503)
  const text = await scrape(app)
  assert.equal(sample(text, 'plantstore_load_shedding_total', { reason: 'overloaded' }), 3)
  assert.equal(sample(text, 'plantstore_load_shedding_total', { reason: 'shutting-down' }), 0)
  assert.equal(sample(text, 'plantstore_load_shedding_total', { reason: 'connection-spent' }), 0)
})

test('the metrics listener closes with the app', async (t) => {
  const app = await buildTestApp(t, { METRICS_PORT: '0' })
  const url = metricsUrl(app)
  assert.equal((await fetch(url)).status, 200)
  await app.close()
  await assert.rejects(fetch(url))
})

// The store's own series are the running store's: SQLite's group commit and WAL series only on SQLite.
if (TEST_DATABASE_URL !== undefined) {
  test('on PostgreSQL no plantstore_sqlite_* series is exported; the store operations are', async (t) => {
    const app = await buildTestApp(t, { METRICS_PORT: '0', DATABASE_URL: scratchDatabaseUrl(t).url })
    assert.equal(
      (await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'Fern' } })).statusCode, 201)
    const text = await scrape(app)
    assert.deepEqual(text.split('\n').filter((line) => line.includes('plantstore_sqlite_')), [])
    assert.equal(
      sample(text, 'plantstore_store_operation_duration_seconds_count', { operation: 'plants.create', outcome: 'ok' }),
      1)
    promtoolCheck(t, text)
  })
}
