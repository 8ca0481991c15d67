import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { AUTH } from '../helpers/app.js'
import { cleanupStack } from '../helpers/cleanup.js'
import { scratchDatabaseUrl, terminateSessions, TEST_DATABASE_URL, withApplicationName } from '../helpers/postgres.js'
import { sandboxSchemaUrl } from '../helpers/sandbox.js'
import { startServer } from '../helpers/server-process.js'
import { assertAcknowledgedWrites, startWriteLoad, untilWritesSucceed } from '../helpers/write-load.js'

/** A sandbox whose tenants never reach a cap under the load: each client is a tenant of its own. */
const SANDBOX_ENV = { API_TOKENS: undefined, SANDBOX: '1', SANDBOX_SEED: 'none', SANDBOX_MAX_PLANTS: '1000000', SANDBOX_RATE_LIMIT_PER_ADDRESS: '0' }

const CLIENTS = 20
const ROUNDS = 12

// What every PostgreSQL restart, failover or idle_session_timeout does to the service's connections,
// idle, checked out or mid-transaction: never a crash, only 503s while it lasts (docs/scaling.md).
if (TEST_DATABASE_URL !== undefined) {
  describe('PostgreSQL ends the service\'s connections under write load', () => {
    for (const sandbox of [false, true]) {
      test(`${sandbox ? 'SANDBOX=1' : 'the API'}: the process stays up, only 2xx and 503, every acknowledged write kept`, async (t) => {
        const cleanup = cleanupStack(t)
        const name = `plant-store-test-${randomBytes(6).toString('hex')}`
        const url = sandbox ? sandboxSchemaUrl(cleanup).url : scratchDatabaseUrl(cleanup).url
        const server = await startServer(cleanup, {
          env: { DATABASE_URL: withApplicationName(url, name), PG_POOL_MAX: '4', PG_CONNECT_TIMEOUT_MS: '2000', ...(sandbox && SANDBOX_ENV) }
        })
        const headers = (n: number): Record<string, string> => sandbox ? { authorization: `Bearer sandbox-disconnects-${n}-0123456789` } : AUTH
        // Every tenant made first: a sandbox's tenants are created at most two at once.
        for (let n = 0; n < CLIENTS; n++) await untilWritesSucceed(server.baseUrl, headers(n), 30_000)
        const load = startWriteLoad(server.baseUrl, { clients: CLIENTS, headers })

        let terminated = 0
        for (let round = 0; round < ROUNDS; round++) {
          await sleep(250)
          terminated += await terminateSessions(name)
        }
        const record = await load.stop()

        assert.equal(server.child.exitCode, null, server.stderr())
        assert.ok(terminated >= ROUNDS, `sessions terminated: ${terminated}`)
        await untilWritesSucceed(server.baseUrl, headers(0), 10_000)
        await assertAcknowledgedWrites(server.baseUrl, record, CLIENTS)
        assert.equal(await server.stop(), 0, server.stderr())
      })
    }
  })
}
