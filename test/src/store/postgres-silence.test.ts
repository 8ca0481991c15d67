import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'
import { openPool } from '../../../src/store/postgres/types.js'
import { TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { until } from '../../helpers/webhook-receiver.js'

/** PG_STATEMENT_TIMEOUT_MS of these pools: a checked-out connection silent for a second more is given up. */
const STATEMENT_TIMEOUT_MS = 200
const BOUND_MS = STATEMENT_TIMEOUT_MS + 1000

/** A pool of one connection, and how many connections it has dropped so far. */
function pool (t: TestContext): { db: pg.Pool, dropped: () => number } {
  const db = openPool({ connectionString: TEST_DATABASE_URL, max: 1 }, STATEMENT_TIMEOUT_MS)
  let removed = 0
  db.on('remove', () => { removed++ })
  t.after(async () => { await db.end() })
  return { db, dropped: () => removed }
}

if (TEST_DATABASE_URL !== undefined) {
  test('a lone statement the server stays silent on fails with the driver\'s words a second past the bound, ' +
    'and its connection leaves the pool', async (t) => {
    const { db, dropped } = pool(t)
    const started = Date.now()
    // A lone statement has no server-side statement_timeout: only this bound ends the wait.
    await assert.rejects(db.query('SELECT pg_sleep(30)'), { message: 'Query read timeout' })
    const waited = Date.now() - started
    assert.ok(waited >= BOUND_MS && waited < 10_000, `gave up after ${waited} ms`)
    await until('the connection left the pool', () => dropped() === 1)
    assert.deepEqual((await db.query('SELECT 1 AS one')).rows, [{ one: 1 }])
  })

  test('an idle connection is never given up, however long it is silent', async (t) => {
    const { db, dropped } = pool(t)
    await db.query('SELECT 1')
    await sleep(BOUND_MS + 500)
    await db.query('SELECT 1')
    assert.equal(dropped(), 0)
  })

  test('a checked-out connection the server keeps answering on stays, though the whole checkout outlasts the ' +
    'bound', async (t) => {
    const { db, dropped } = pool(t)
    const client = await db.connect()
    try {
      const started = Date.now()
      // Each statement answers within the bound; together they take longer than it.
      for (let i = 0; i < 3; i++) await client.query('SELECT pg_sleep(0.6)')
      assert.ok(Date.now() - started > BOUND_MS)
    } finally {
      client.release()
    }
    await db.query('SELECT 1')
    assert.equal(dropped(), 0)
  })
}
