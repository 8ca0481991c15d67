import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { AUTH } from '../helpers/app.js'
import { cleanupStack, type Cleanup } from '../helpers/cleanup.js'
import { startCluster } from '../helpers/pg-cluster.js'
import {
  scratchDatabaseUrl, terminateSessions, TEST_DATABASE_URL, withApplicationName,
  withSchema
} from '../helpers/postgres.js'
import { sandboxSchemaUrl } from '../helpers/sandbox.js'
import { startServer, type ServerProcess } from '../helpers/server-process.js'
import { assertAcknowledgedWrites, startWriteLoad, untilWritesSucceed, type WriteLoad } from '../helpers/write-load.js'

/** A sandbox whose tenants never reach a cap under the load: each client is a tenant of its own. */
const SANDBOX_ENV = {
  API_TOKENS: undefined,
  SANDBOX: '1',
  SANDBOX_SEED: 'none',
  SANDBOX_MAX_PLANTS: '1000000',
  SANDBOX_RATE_LIMIT_PER_ADDRESS: '0'
}

const CLIENTS = 20
const ROUNDS = 12

const headersOf = (sandbox: boolean) => (n: number): Record<string, string> =>
  sandbox ? { authorization: `Bearer sandbox-disconnects-${n}-0123456789` } : AUTH

/** The server on `url` under write load from CLIENTS clients (a sandbox's tenants all made first). */
async function serverUnderLoad (t: Cleanup, url: string,
  sandbox: boolean): Promise<{ server: ServerProcess, load: WriteLoad }> {
  const server = await startServer(t,
    { env: { DATABASE_URL: url, PG_POOL_MAX: '4', PG_CONNECT_TIMEOUT_MS: '2000', ...(sandbox && SANDBOX_ENV) } })
  const headers = headersOf(sandbox)
  // A sandbox makes new tenants' schemas at most two at once: all made before the outages.
  for (let n = 0; n < CLIENTS; n++) await untilWritesSucceed(server.baseUrl, headers(n), 30_000)
  return { server, load: startWriteLoad(server.baseUrl, { clients: CLIENTS, headers }) }
}

/** After the outage: the process is up, writes succeed again, the load's record holds, and it stops cleanly. */
async function assertRecovered (server: ServerProcess, load: WriteLoad, sandbox: boolean): Promise<void> {
  const record = await load.stop()
  assert.equal(server.child.exitCode, null, server.stderr())
  await untilWritesSucceed(server.baseUrl, headersOf(sandbox)(0), 20_000)
  await assertAcknowledgedWrites(server.baseUrl, record, CLIENTS)
  assert.equal(await server.stop(), 0, server.stderr())
}

// What every PostgreSQL restart, failover or idle_session_timeout does to the service's connections,
// idle, checked out or mid-transaction: never a crash, only 503s while it lasts (docs/scaling.md).
if (TEST_DATABASE_URL !== undefined) {
  describe('PostgreSQL ends the service\'s connections under write load', () => {
    for (const sandbox of [false, true]) {
      const mode = sandbox ? 'SANDBOX=1' : 'the API'

      test(`${mode}: sessions terminated again and again: the process stays up, only 2xx and 503, every ` +
        'acknowledged write kept', async (t) => {
        const cleanup = cleanupStack(t)
        const name = `plant-store-test-${randomBytes(6).toString('hex')}`
        const url = sandbox ? sandboxSchemaUrl(cleanup).url : scratchDatabaseUrl(cleanup).url
        const { server, load } = await serverUnderLoad(cleanup, withApplicationName(url, name), sandbox)
        let terminated = 0
        for (let round = 0; round < ROUNDS; round++) {
          await sleep(250)
          terminated += await terminateSessions(name)
        }
        assert.ok(terminated >= ROUNDS, `sessions terminated: ${terminated}`)
        await assertRecovered(server, load, sandbox)
      })

      test(`${mode}: its PostgreSQL restarted: the same, and writes succeed ` +
        'again once it is back', async (t: TestContext) => {
        const cleanup = cleanupStack(t)
        const cluster = await startCluster(cleanup)
        const { server, load } = await serverUnderLoad(cleanup, withSchema(cluster.url(), 'plant_store'), sandbox)
        await sleep(500)
        await cluster.stop('fast')
        await sleep(1000)
        await cluster.start()
        const recoveryMs = await untilWritesSucceed(server.baseUrl, headersOf(sandbox)(0), 20_000)
        await assertRecovered(server, load, sandbox)
        // Measured, never asserted tight (docs/scaling.md reports it): the timing belongs to the machine.
        t.diagnostic(`first acknowledged write ${recoveryMs} ms after PostgreSQL accepted connections again`)
      })
    }
  })
}
