import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import type { FastifyInstance } from 'fastify'
import { FILE_CHECK_INTERVAL_MS } from '../../../src/store/sqlite/failures.js'
import { AUTH, buildTestApp, captureLog } from '../../helpers/app.js'
import { cleanupStack, tempDatabaseFile } from '../../helpers/cleanup.js'
import { scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { buildSandboxApp, sandboxDatabases } from '../../helpers/sandbox.js'
import { startTcpProxy } from '../../helpers/tcp-proxy.js'
import { until } from '../../helpers/webhook-receiver.js'

async function scrape (app: FastifyInstance): Promise<string> {
  const address = app.metrics?.address()
  assert.ok(address)
  const res = await fetch(`http://127.0.0.1:${address.port}/metrics`)
  assert.equal(res.status, 200)
  return await res.text()
}

/** Every sample of `name` as `labels → value`, labels written `k=v,k=v` in the exposition's order. */
function samples (text: string, name: string): Map<string, number> {
  const found = new Map<string, number>()
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match?.[1] === name) found.set((match[2] ?? '').replaceAll('"', ''), Number(match[3]))
  }
  return found
}

const databaseUp = (text: string): number | undefined => samples(text, 'plantstore_database_up').get('')
const ready = (text: string): number | undefined => samples(text, 'plantstore_ready').get('')

/** `promtool check metrics` over a scrape, when promtool is installed (CI installs it: Debian package prometheus). */
function promtoolCheck (t: TestContext, text: string): void {
  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' })
  if (promtool.error !== undefined) {
    t.diagnostic('promtool not installed (Debian package prometheus): its check was skipped')
    return
  }
  assert.equal(promtool.status, 0, `${promtool.stdout}${promtool.stderr}`)
}

interface Line { level: number, msg: string, cause?: string, downMs?: number }
const lines = (text: string): Line[] => text.split('\n').filter((line) => line !== '').map(
  (line) => JSON.parse(line) as Line)

test('SQLite: plantstore_database_up is 1, then 0 once the file is deleted, logged once with ' +
  'its cause; no pool series', async (t) => {
  const cleanup = cleanupStack(t)
  const file = tempDatabaseFile(cleanup, 'plant-store-database-up-')
  const log = captureLog()
  const app = await buildTestApp(cleanup, { DATABASE_URL: file, METRICS_PORT: '0', LOG_LEVEL: 'info' },
    { logStream: log.stream })
  const before = await scrape(app)
  assert.deepEqual([databaseUp(before), ready(before)], [1, 1])
  assert.deepEqual([...samples(before, 'plantstore_db_pool_connections')], [])
  assert.doesNotMatch(before, /plantstore_db_pool/)
  promtoolCheck(t, before)

  rmSync(file)
  // The file is looked at most every FILE_CHECK_INTERVAL_MS: the next look is due.
  await sleep(FILE_CHECK_INTERVAL_MS + 5)
  const lost = await scrape(app)
  assert.deepEqual([databaseUp(lost), ready(lost)], [0, 0])
  assert.equal((await app.inject({ url: '/health/ready' })).statusCode, 503)
  assert.equal(databaseUp(await scrape(app)), 0)
  const down = lines(log.text()).filter((line) => line.msg === 'the database is unreachable')
  assert.deepEqual(down.map((line) => [line.level, line.cause]),
    [[50, `${file} was deleted or replaced while in use`]])
})

if (TEST_DATABASE_URL !== undefined) {
  const serverPort = Number(new URL(TEST_DATABASE_URL).port || 5432)

  test('PostgreSQL: every pool by state (idle, busy, waiting) and its bound; a full pool\'s ' +
    'callers are `waiting`', { timeout: 30_000 }, async (t) => {
    const { url, schema } = scratchDatabaseUrl(t)
    const app = await buildTestApp(t, { DATABASE_URL: url, METRICS_PORT: '0', PG_POOL_MAX: '2' })
    const first = await scrape(app)
    assert.equal(databaseUp(first), 1)
    assert.deepEqual([...samples(first, 'plantstore_db_pool_max_connections')].sort(),
      [['pool=api', 2], ['pool=dispatcher', 4], ['pool=webhooks', 4]])
    const states = [...samples(first, 'plantstore_db_pool_connections').keys()].sort()
    assert.deepEqual(states, ['api', 'dispatcher', 'webhooks'].flatMap((pool) =>
      ['busy', 'idle', 'waiting'].map((state) => `pool=${pool},state=${state}`)).sort())
    promtoolCheck(t, first)
    const { item: plant } = await app.store.plants.create({ name: 'locked' })

    // Three reads queue on a lock held elsewhere: two hold the API pool's connections, one waits for one.
    const locker = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await locker.connect()
    t.after(async () => { await locker.end() })
    await locker.query('BEGIN')
    await locker.query(`LOCK TABLE ${schema}.plants IN ACCESS EXCLUSIVE MODE`)
    const reads = Array.from({ length: 3 }, async () =>
      await app.inject({ url: `/plants/${plant.id}`, headers: AUTH }))
    let held = new Map<string, number>()
    await until('two reads hold the API pool and one waits', async () => {
      held = samples(await scrape(app), 'plantstore_db_pool_connections')
      return held.get('pool=api,state=busy') === 2 && (held.get('pool=api,state=waiting') ?? 0) >= 1
    }, 20_000)
    assert.equal(held.get('pool=api,state=idle'), 0)
    await locker.query('COMMIT')
    for (const res of await Promise.all(reads)) assert.equal(res.statusCode, 200)

    // A probe a scrape left queued meanwhile may still hold a connection for a moment.
    let after = new Map<string, number>()
    await until('the API pool is idle again', async () => {
      after = samples(await scrape(app), 'plantstore_db_pool_connections')
      return after.get('pool=api,state=busy') === 0
    }, 10_000)
    assert.deepEqual([after.get('pool=api,state=waiting'), after.get('pool=api,state=idle')], [0, 2])
  })

  test('PostgreSQL lost and back: plantstore_database_up 1, 0, 1; one line as it goes (the ' +
    'cause), one as it is back', { timeout: 30_000 }, async (t) => {
    const proxy = await startTcpProxy(serverPort)
    t.after(() => proxy.close())
    const url = new URL(scratchDatabaseUrl(t).url)
    url.port = String(proxy.port)
    const log = captureLog()
    const app = await buildTestApp(t, {
      DATABASE_URL: url.toString(),
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      PG_CONNECT_TIMEOUT_MS: '2000'
    },
    { logStream: log.stream })
    assert.equal(databaseUp(await scrape(app)), 1)

    await proxy.down()
    assert.equal(databaseUp(await scrape(app)), 0)
    assert.equal((await app.inject({ url: '/health/ready' })).statusCode, 503)
    await proxy.up()
    // The watch probes an unreachable database again by itself: no request is needed to see it back.
    await until('the database is back in the log', () =>
      lines(log.text()).some((line) => line.msg === 'the database is back'), 10_000)
    assert.equal(databaseUp(await scrape(app)), 1)

    const told = lines(log.text()).filter((line) => line.msg.startsWith('the database is'))
    assert.deepEqual(told.map((line) => [line.level, line.msg]),
      [[50, 'the database is unreachable'], [40, 'the database is back']])
    assert.match(told[0]?.cause ?? '', /ECONNREFUSED|Connection terminated|ECONNRESET/)
    assert.ok((told[1]?.downMs ?? -1) >= 0)
  })
}

for (const database of sandboxDatabases) {
  test(`sandbox on ${database.name}: the tenants' shared pools and the registry's are reported too`, async (t) => {
    const app = await buildSandboxApp(t, database, { METRICS_PORT: '0' })
    const text = await scrape(app)
    assert.equal(databaseUp(text), 1)
    const pools = [...samples(text, 'plantstore_db_pool_max_connections')].sort()
    assert.deepEqual(pools, database.name === 'SQLite'
      ? []
      : [['pool=api', 4], ['pool=dispatcher', 4], ['pool=sandbox', 4], ['pool=sandbox-dispatcher', 4],
          ['pool=sandbox-registry', 4], ['pool=webhooks', 4]])
    promtoolCheck(t, text)
  })
}

test('plantstore_ready is 0 from the start of a drain (as /health/ready), while the database ' +
  'still answers', async (t) => {
  const app = await buildTestApp(t, { METRICS_PORT: '0', SHUTDOWN_DELAY_MS: '3000' })
  const text = await scrape(app)
  assert.deepEqual([databaseUp(text), ready(text)], [1, 1])
  // SHUTDOWN_DELAY_MS: the instance still serves (and is scraped) while readiness says it is going away.
  const closing = app.close()
  await until('the drain has begun', () => app.draining)
  const draining = await scrape(app)
  assert.deepEqual([databaseUp(draining), ready(draining)], [1, 0])
  await closing
})
