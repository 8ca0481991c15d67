import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { isConnectionError } from '../../../src/store/postgres/connection.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { WaitBoundPool } from '../../../src/store/postgres/wait-bound-pool.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'

const BOUND_MS = 300

function pool (t: TestContext, connectionString: string, boundMs = BOUND_MS): WaitBoundPool {
  const db = new WaitBoundPool({ connectionString, max: 1, connectionTimeoutMillis: boundMs })
  db.on('error', () => {})
  t.after(async () => { await db.end() })
  return db
}

const waitedTooLong = (err: unknown): boolean => {
  assert.equal((err as Error).message, 'timeout exceeded when trying to connect')
  assert.equal(isConnectionError(err), true)
  return true
}

test('a new connection the server never answers is given up at the bound, and its socket closed',
  { timeout: 10_000 }, async (t) => {
    const sockets: Socket[] = []
    // Reads what the driver sends (a paused socket would never see it close) and answers nothing.
    const silent = createServer((socket) => { sockets.push(socket); socket.resume() })
    silent.listen(0, '127.0.0.1')
    await once(silent, 'listening')
    t.after(() => { for (const socket of sockets) socket.destroy(); silent.close() })
    const { port } = silent.address() as AddressInfo
    const db = pool(t, `postgres://nobody@127.0.0.1:${port}/none`)

    const started = Date.now()
    await assert.rejects(db.query('SELECT 1'), waitedTooLong)
    const waited = Date.now() - started
    assert.ok(waited >= BOUND_MS - 5 && waited < 2000, `gave up after ${waited} ms`)
    // The client's own bound ends the attempt too: the pool holds no connection stuck connecting.
    const closed = sockets.map(async (socket) => { if (!socket.closed) await once(socket, 'close') })
    await Promise.all(closed)
    assert.equal(sockets.length, 1)
    assert.equal(db.totalCount, 0)
  })

if (TEST_DATABASE_URL !== undefined) {
  const databaseUrl = TEST_DATABASE_URL

  test('PostgreSQL: a checkout that waits on a busy pool past the bound fails, and its statement never runs',
    async (t) => {
      const { schema } = scratchDatabaseUrl(t)
      await adminQuery(`CREATE SCHEMA ${schema}`)
      await adminQuery(`CREATE TABLE ${schema}.marks (n int)`)
      const db = pool(t, databaseUrl)
      const held = await db.connect()

      const started = Date.now()
      await assert.rejects(db.query(`INSERT INTO ${schema}.marks VALUES (1)`), waitedTooLong)
      await assert.rejects(db.connect(), waitedTooLong)
      const waited = Date.now() - started
      assert.ok(waited >= 2 * BOUND_MS - 5 && waited < 2000, `gave up after ${waited} ms`)

      held.release()
      // The connection the late checkouts were due goes back unused; the next statement gets it.
      assert.deepEqual((await db.query(`SELECT count(*)::int AS marks FROM ${schema}.marks`)).rows, [{ marks: 0 }])
      assert.equal(db.totalCount, 1)
      assert.equal(db.idleCount, 1)
    })

  test('PostgreSQL: each waiter has its own deadline: the one timer, due for an earlier waiter, fails no later one',
    async (t) => {
      const db = pool(t, databaseUrl, 1000)
      const holder = await db.connect()
      const first = db.connect()
      await sleep(600)
      // Due 600 ms after the first, which is served before its own deadline and holds the connection past it.
      const second = db.query('SELECT 2 AS n')
      await sleep(100)
      holder.release()
      const held = await first
      await sleep(600)
      held.release()
      assert.deepEqual((await second).rows, [{ n: 2 }])
    })

  test('PostgreSQL: a store whose connections are all busy answers unavailable after PG_CONNECT_TIMEOUT_MS',
    async (t) => {
      const { url, schema } = scratchDatabaseUrl(t)
      const store = await createPostgresStore({ url, poolMax: 1, connectTimeoutMs: BOUND_MS })
      t.after(() => store.close())
      const { item: plant } = await store.plants.create({ name: 'busy' })
      const locker = new pg.Client({ connectionString: databaseUrl })
      await locker.connect()
      t.after(async () => { await locker.end() })
      await locker.query('BEGIN')
      await locker.query(`SELECT 1 FROM ${schema}.plants WHERE id = $1 FOR UPDATE`, [String(plant.id)])

      // The store's one connection waits on the lock; the read behind it waits for that connection.
      const deleting = store.plants.delete(plant.id)
      const started = Date.now()
      await assert.rejects(store.plants.get(plant.id), (err: unknown) => {
        assert.equal((err as { code?: string }).code, 'unavailable')
        return true
      })
      const waited = Date.now() - started
      assert.ok(waited >= BOUND_MS - 5 && waited < 2000, `answered after ${waited} ms`)

      await locker.query('ROLLBACK')
      assert.equal((await deleting).id, plant.id)
      assert.equal(await store.plants.get(plant.id), undefined)
    })
}
