import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { AUTH } from '../helpers/app.js'
import { cleanupStack, type Cleanup } from '../helpers/cleanup.js'
import { startCluster, type PgCluster } from '../helpers/pg-cluster.js'
import { startPgbouncer } from '../helpers/pgbouncer.js'
import { TEST_DATABASE_URL } from '../helpers/postgres.js'
import { startServer } from '../helpers/server-process.js'
import { startReceiver, until, verifyWebhook } from '../helpers/webhook-receiver.js'
import { subscribe, type EventBody } from '../helpers/webhook-http.js'
import { assertAcknowledgedWrites, startWriteLoad, untilWritesSucceed } from '../helpers/write-load.js'

const CLIENTS = 20

/** Whether the server behind `url` is a standby; false when it cannot be asked. */
async function inRecovery (url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => {})
  try {
    await client.connect()
    return (await client.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby')).rows[0]?.standby === true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

/** A primary and its synchronous streaming standby, both this test's own on loopback. */
async function synchronousPair (cleanup: Cleanup): Promise<{ primary: PgCluster, standby: PgCluster }> {
  const primary = await startCluster(cleanup)
  const standby = await primary.standby()
  // Only now: the standby copied the primary's settings, and a promoted one must not wait for a standby of its own.
  await primary.query("ALTER SYSTEM SET synchronous_standby_names = '*'")
  await primary.query('SELECT pg_reload_conf()')
  await until('the standby is synchronous', async () =>
    (await primary.query<{ sync_state: string }>(
      'SELECT sync_state FROM pg_stat_replication'))[0]?.sync_state === 'sync', 10_000)
  return { primary, standby }
}

/** What an operator promises for a failover (docs/scaling.md#failover): writes again within this of the promotion. */
const RECOVERY_BOUND_MS = 15_000

// A primary, a synchronous standby and PgBouncer, all this test's own on loopback: the primary is
// lost (stopped as by a crash), the standby promoted and the pooler pointed at it, the service
// untouched. It recovers by itself and loses nothing it acknowledged (docs/scaling.md#failover).
if (TEST_DATABASE_URL !== undefined) {
  test('failover to a synchronous standby behind PgBouncer: no restart, nothing acknowledged lost, ' +
    'every event delivered', { timeout: 180_000 }, async (t) => {
    const cleanup = cleanupStack(t)
    const { primary, standby } = await synchronousPair(cleanup)
    // Transaction mode with stock settings, as production runs it; no DATABASE_DIRECT_URL (it would name the
    // lost primary), so the dispatcher polls. A login to the lost primary that failed is retried after
    // server_login_retry: 15 s by default, 1 s as docs/scaling.md#failover advises.
    const pooler = await startPgbouncer({
      backend: primary.url(),
      poolMode: 'transaction',
      settings: { server_login_retry: 1 }
    }, cleanup)
    const receiver = await startReceiver(cleanup)
    const server = await startServer(cleanup, {
      env: {
        DATABASE_URL: pooler.url(primary.url()),
        PG_POOL_MAX: '4',
        PG_CONNECT_TIMEOUT_MS: '2000',
        WEBHOOK_ALLOW_PRIVATE_URLS: '1',
        WEBHOOK_POLL_INTERVAL_MS: '200'
      }
    })
    const subscription = await subscribe(server.baseUrl, `${receiver.origin}/hook`)
    const load = startWriteLoad(server.baseUrl, { clients: CLIENTS, headers: () => AUTH })

    await sleep(1500)
    await primary.stop('immediate')
    // Pointed at the standby before its promotion, as a failover tool may: its writes are refused (read-only), 503s.
    await pooler.repoint('127.0.0.1', standby.port)
    await until('the pooler reaches the standby', async () => await inRecovery(pooler.url(primary.url())), 10_000)
    await sleep(1000)
    await standby.promote()
    const promoted = performance.now()
    await untilWritesSucceed(server.baseUrl, AUTH, RECOVERY_BOUND_MS)
    const recoveryMs = performance.now() - promoted
    assert.ok(recoveryMs < RECOVERY_BOUND_MS, `writes succeeded again ${recoveryMs.toFixed(0)} ms after the promotion`)
    // Writes go on on the new primary for a while.
    await sleep(1500)
    const record = await load.stop()
    assert.equal(server.child.exitCode, null, server.stderr())
    await assertAcknowledgedWrites(server.baseUrl, record, CLIENTS)

    // Each acknowledged write's event, at least once: the kept plants' creations, the deleted ones' both events.
    const expected = new Set<string>()
    for (const { id } of record.kept.values()) expected.add(`plant.created ${id}`)
    for (const { id } of record.deleted.values()) {
      expected.add(`plant.created ${id}`)
      expected.add(`plant.deleted ${id}`)
    }
    const received = new Set<string>()
    await until(`all ${expected.size} events delivered`, () => {
      for (const request of receiver.requests.splice(0)) {
        const event = verifyWebhook(subscription.secret, request) as EventBody
        received.add(`${event.type} ${String(event.data.id)}`)
      }
      return [...expected].every((event) => received.has(event))
    }, 60_000)
    assert.equal(await server.stop(), 0, server.stderr())
    t.diagnostic(`writes succeeded again ${recoveryMs.toFixed(0)} ms after the promotion; ` +
      `${record.statuses.get(201) ?? 0} creates and ${record.statuses.get(204) ?? 0} deletes acknowledged, ` +
      `${record.statuses.get(503) ?? 0} answers 503; ${expected.size} events delivered`)
  })
}

// A COMMIT whose synchronous standby is away waits for it; were that wait cut short with success, the
// write would be acknowledged while on the primary alone, and a failover would lose it. PostgreSQL's
// statement_timeout does not end that wait; the driver's bound fails the request (docs/scaling.md#failover).
if (TEST_DATABASE_URL !== undefined) {
  test('a write whose synchronous standby is away is never acknowledged: 503, then 201 ' +
    'once the standby is back', { timeout: 120_000 }, async (t) => {
    const cleanup = cleanupStack(t)
    const { primary, standby } = await synchronousPair(cleanup)
    const server = await startServer(cleanup, { env: { DATABASE_URL: primary.url(), PG_STATEMENT_TIMEOUT_MS: '300' } })
    await untilWritesSucceed(server.baseUrl, AUTH, 10_000)

    await standby.stop('fast')
    const res = await fetch(`${server.baseUrl}/plants`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'only on the primary' })
    })
    const body = await res.json() as { error: number, message: string }
    assert.equal(res.status, 503, JSON.stringify(body))
    assert.equal(body.error, 503)

    await standby.start()
    await untilWritesSucceed(server.baseUrl, AUTH, RECOVERY_BOUND_MS)
    assert.equal(await server.stop(), 0, server.stderr())
  })
}
