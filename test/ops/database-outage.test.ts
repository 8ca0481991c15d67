import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { AUTH } from '../helpers/app.js'
import { cleanupStack } from '../helpers/cleanup.js'
import { startCluster } from '../helpers/pg-cluster.js'
import { startPgbouncer } from '../helpers/pgbouncer.js'
import { TEST_DATABASE_URL } from '../helpers/postgres.js'
import { bannerLine, logLines, startServer, type LogLine } from '../helpers/server-process.js'
import { until } from '../helpers/webhook-receiver.js'

/**
 * Longer than the watch's summary period (FAILURE_SUMMARY_MS): the outage gets a periodic summary, and one at its end.
 */
const OUTAGE_MS = 11_000

/** Writes from a few clients, each paced, until stopped: the statuses they were answered. */
function paced (baseUrl: string, clients: number): { statuses: number[], stop: () => Promise<void> } {
  const statuses: number[] = []
  const stopping = new AbortController()
  const client = async (): Promise<void> => {
    while (!stopping.signal.aborted) {
      const res = await fetch(`${baseUrl}/plants`, {
        method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'load' })
      })
      statuses.push(res.status)
      if (res.status === 503) {
        assert.deepEqual(await res.json(), { error: 503, message: 'The database is unavailable, retry shortly' })
      } else await res.text()
      await sleep(20)
    }
  }
  const running = Array.from({ length: clients }, client)
  return { statuses, stop: async () => { stopping.abort(); await Promise.all(running) } }
}

async function databaseUp (metricsUrl: string): Promise<string | undefined> {
  const text = await (await fetch(metricsUrl)).text()
  return /^plantstore_database_up (\S+)$/m.exec(text)?.[1]
}

// The operator's view of an outage (issue 54): a real server on a real PostgreSQL this test stops and starts.
// Directly, and as the operator runs it: behind PgBouncer in transaction mode (server_login_retry
// lowered, as docs/scaling.md#failover advises, or the pooler itself waits 15 s before trying the server again).
for (const via of TEST_DATABASE_URL === undefined ? [] : ['directly', 'through PgBouncer'] as const) {
  test(`PostgreSQL stopped under load, ${via}: one line as it goes, summaries instead of a line per failed ` +
    'request, one as it is back', { timeout: 90_000 }, async (t) => {
    const cleanup = cleanupStack(t)
    const cluster = await startCluster(cleanup)
    const databaseUrl = via === 'directly'
      ? cluster.url()
      : (await startPgbouncer({ backend: cluster.url(), poolMode: 'transaction', settings: { server_login_retry: 1 } },
          cleanup)).url()
    const server = await startServer(cleanup, {
      env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', METRICS_PORT: '0', PG_CONNECT_TIMEOUT_MS: '2000' }
    })
    const metricsUrl = String(bannerLine(server.stdout())?.metrics)
    assert.equal(await databaseUp(metricsUrl), '1')
    const load = paced(server.baseUrl, 3)
    await until('writes succeed', () => load.statuses.includes(201), 10_000)

    await cluster.stop('fast')
    const stopped = load.statuses.length
    await until('writes are answered 503', () => load.statuses.slice(stopped).includes(503), 10_000)
    // The gauge is the probe's verdict: through a pooler the probe a failed request starts may still wait for a
    // server when the first 503 goes out.
    await until('database_up says 0', async () => await databaseUp(metricsUrl) === '0', 10_000)
    await sleep(OUTAGE_MS)
    await cluster.start()
    await server.waitForLog((line) => line.msg === 'the database is back')
    const back = load.statuses.length
    await until('writes succeed again', () => load.statuses.slice(back).includes(201), 10_000)
    await load.stop()
    assert.equal(await databaseUp(metricsUrl), '1')
    assert.deepEqual([...new Set(load.statuses)].sort(), [201, 503])

    const lines = logLines(server.stdout()).filter((line) => !String(line.msg).startsWith('plant-store is listening'))
    const named = (msg: string): LogLine[] => lines.filter((line) => line.msg === msg)
    const [down] = named('the database is unreachable')
    const [up] = named('the database is back')
    assert.equal(named('the database is unreachable').length, 1)
    assert.equal(named('the database is back').length, 1)
    assert.equal(down?.level, 50)
    // The driver's (or the pooler's) words, not the 503's. Through PgBouncer a query sent while the pooler waits for
    // a server can be the first to fail, by the driver's own read timeout.
    assert.match(String(down?.cause),
      /ECONNREFUSED|ECONNRESET|terminating connection|shutting down|Connection terminated|server|Query read timeout/)
    t.diagnostic(`cause: ${String(down?.cause)}`)
    assert.equal(up?.level, 40)
    assert.ok(Number(up?.downMs) >= OUTAGE_MS, `downMs ${String(up?.downMs)}`)
    assert.ok(lines.indexOf(down as LogLine) < lines.indexOf(up as LogLine))

    // Every 503 still has its access line at info; of their error lines one is written, the rest counted.
    const refused = lines.filter((line) => line.msg === 'request completed' && line.statusCode === 503)
    assert.equal(refused.length, load.statuses.filter((status) => status === 503).length)
    assert.ok(refused.every((line) => line.level === 30))
    const failed = named('request failed')
    const summaries = named('failures while the database was unavailable')
    // One, also when the dispatcher's failure found the outage before a request did.
    assert.equal(failed.length, 1)
    assert.ok(summaries.length >= 2, `${summaries.length} summaries`)
    assert.ok(summaries.every((line) => line.level === 50 && Number(line.failedRequests) > 0))
    // The webhook dispatcher's failures are counted alike once the database is known down.
    assert.ok(summaries.some((line) => Number(line.dispatcherErrors) > 0))
    assert.ok(named('webhook dispatcher: the database failed; deliveries wait and are retried').length <= 2)
    assert.equal(failed.length + summaries.reduce((sum, line) => sum + Number(line.failedRequests), 0), refused.length)
    // The last summary is written before the line that says the database is back.
    assert.ok(lines.indexOf(summaries.at(-1) as LogLine) < lines.indexOf(up as LogLine))
    t.diagnostic(
      `${refused.length} requests answered 503; ${lines.filter((line) => Number(line.level) >= 50).length} error lines`)
  })
}
