import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, TOKEN } from '../../helpers/app.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { adminQuery, scratchDatabase, terminateDatabaseSessions, TEST_DATABASE_URL } from '../../helpers/postgres.js'

// Readiness means this instance can serve its traffic, writes included: a PostgreSQL database that
// answers reads but refuses every write (a standby, a demoted primary during a failover,
// default_transaction_read_only) makes it not ready, so a balancer sends traffic elsewhere.

const PG_POOL_MAX = 2

if (TEST_DATABASE_URL !== undefined) {
  test('PostgreSQL read-only: /health/ready and /health answer 503 saying so, writes 503, reads ' +
    '200; ready again once writable', async (t) => {
    const cleanup = cleanupStack(t)
    const database = await scratchDatabase(cleanup)
    const app = await buildTestApp(cleanup, { DATABASE_URL: database.url, PG_POOL_MAX: String(PG_POOL_MAX) })
    const auth = { authorization: `Bearer ${TOKEN}` }
    assert.equal((await app.inject({ url: '/health/ready' })).statusCode, 200)

    // New sessions are read-only; ending the open ones makes the pool take new ones.
    const readOnly = async (on: boolean): Promise<void> => {
      const readOnly = on ? 'SET default_transaction_read_only = on' : 'RESET default_transaction_read_only'
      await adminQuery(`ALTER DATABASE ${database.name} ${readOnly}`)
      await terminateDatabaseSessions(database.name)
    }
    /** Readiness once the pool has dropped the sessions ended under it (each is one failed statement at most). */
    const settledReadiness = async () => {
      for (let attempt = 1; ; attempt++) {
        const res = await app.inject({ url: '/health/ready' })
        if (attempt === PG_POOL_MAX + 1 || !res.body.includes('does not answer')) return res
      }
    }
    await readOnly(true)
    assert.equal((await settledReadiness()).statusCode, 503)
    const write = await app.inject({ method: 'POST', url: '/plants', headers: auth, payload: { name: 'Fern' } })
    assert.equal(write.statusCode, 503, write.body)
    assert.equal((await app.inject({ url: '/plants', headers: auth })).statusCode, 200)
    const ready = await app.inject({ url: '/health/ready' })
    assert.deepEqual([ready.statusCode, ready.headers['retry-after'], ready.json()],
      [503, '5', { error: 503, message: 'Not ready: the database is read-only' }])
    const health = await app.inject({ url: '/health' })
    assert.deepEqual([health.statusCode, health.json()], [503, { error: 503, message: 'The database is read-only' }])
    assert.equal((await app.inject({ url: '/health/live' })).statusCode, 200)

    await readOnly(false)
    assert.equal((await settledReadiness()).statusCode, 200)
    assert.equal(
      (await app.inject({ method: 'POST', url: '/plants', headers: auth, payload: { name: 'Fern' } })).statusCode, 201)
  })
}
