import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import pg from 'pg'
import { migrations } from '../../../src/store/postgres/migrations.js'
import {
  inTransaction, isConnectionError, isPostgresUrl, parsePostgresUrl, postgresFailure, settledPool,
  tablePrefix, withPostgresFailures
} from '../../../src/store/postgres/connection.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { StoreOpenError } from '../../../src/lib/errors.js'
import type { Store } from '../../../src/store/contract.js'
import {
  adminQuery, scratchDatabaseUrl, terminateSessions, TEST_DATABASE_URL, withApplicationName
} from '../../helpers/postgres.js'
import { startTcpProxy } from '../../helpers/tcp-proxy.js'

test('postgres:// and postgresql:// URLs select PostgreSQL; paths and :memory: do not', () => {
  assert.equal(isPostgresUrl('postgres://u@h/db'), true)
  assert.equal(isPostgresUrl('POSTGRESQL://u@h/db'), true)
  assert.equal(isPostgresUrl('data/plants.db'), false)
  assert.equal(isPostgresUrl(':memory:'), false)
  assert.equal(isPostgresUrl('postgres.db'), false)
})

test('?schema= is taken out of the URL (no startup parameter for it); other parameters stay; ' +
  'bad names are refused', () => {
  assert.deepEqual(parsePostgresUrl('postgres://u@h/db'), { connectionString: 'postgres://u@h/db' })
  const target = parsePostgresUrl('postgres://u@h:5433/db?schema=plants_1&application_name=x')
  assert.deepEqual(target, { connectionString: 'postgres://u@h:5433/db?application_name=x', schema: 'plants_1' })
  for (const bad of ['Plants', 'a-b', 'x;drop', '1st', '', 'a'.repeat(64)]) {
    assert.throws(() => parsePostgresUrl(`postgres://u@h/db?schema=${encodeURIComponent(bad)}`),
      /schema must be a lower-case SQL name/, bad)
  }
})

if (TEST_DATABASE_URL !== undefined) {
  test('PostgreSQL: a settled pool\'s transactions carry its settings, lone statements go as they are (in a ' +
    'transaction of their own with asynchronous commit), and its session keeps none of them', async (t) => {
    const { url, schema } = scratchDatabaseUrl(t)
    await adminQuery(
      `CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.here (x integer); INSERT INTO ${schema}.here VALUES (7)`)
    // One connection: what a transaction set would be seen by the next statement, if it leaked.
    const raw = new pg.Pool({ connectionString: parsePostgresUrl(url).connectionString, max: 1 })
    t.after(async () => { await raw.end() })
    const pool = settledPool(raw, { schema, statementTimeoutMs: 1234, asynchronousCommit: true })
    const settings = "SELECT current_setting('search_path') AS path, " +
      "current_setting('statement_timeout') AS statement, " +
      "current_setting('lock_timeout') AS lock, current_setting('synchronous_commit') AS commit"
    const inside = await inTransaction(pool, async (client) => (await client.query(settings)).rows[0] as unknown)
    assert.deepEqual(inside, { path: schema, statement: '1234ms', lock: '1234ms', commit: 'off' })
    const { rows: [after] } = await raw.query<Record<string, string>>(settings)
    assert.ok(after !== undefined)
    assert.deepEqual([after.path === schema, after.statement, after.lock, after.commit], [false, '0', '0', 'on'])
    // With asynchronous commit (the dispatcher's bookkeeping), a lone statement runs in a transaction
    // of its own, which alone can carry the setting.
    assert.deepEqual((await pool.query(settings)).rows, [inside])
    // Otherwise it is sent as it is (one round trip), on the session's own settings, with or without
    // a schema: it names its tables schema-qualified.
    const api = settledPool(raw, { schema, statementTimeoutMs: 1234 })
    assert.deepEqual((await api.query(settings)).rows, [after])
    assert.deepEqual((await api.query<{ x: number }>(`SELECT x FROM ${tablePrefix(schema)}here`)).rows, [{ x: 7 }])
    await assert.rejects(api.query('SELECT x FROM here'), { code: '42P01' })
    const plain = settledPool(raw, { statementTimeoutMs: 1234 })
    assert.deepEqual((await plain.query(settings)).rows, [after])
  })
}

test('connection errors are told apart from other errors', () => {
  const coded = (code: string): Error => Object.assign(new Error('x'), { code })
  for (const err of [coded('ECONNREFUSED'), coded('57P01'), coded('08006'),
    new Error('Connection terminated unexpectedly'),
    new Error('timeout exceeded when trying to connect'), new Error('timeout expired')]) {
    assert.equal(isConnectionError(err), true, err.message)
  }
  for (const err of [coded('23505'), coded('42P01'), new Error('boom'), new Error('timeout expired here'),
    'ECONNREFUSED']) {
    assert.equal(isConnectionError(err), false, String(err))
  }
})

test('every failure to reach or use the database is unavailable (storage-full when its ' +
  'disk is); bugs stay bugs', () => {
  const coded = (code: string): Error => Object.assign(new Error(`error ${code}`), { code })
  const cases: Array<[unknown, string | undefined]> = [
    [coded('ECONNREFUSED'), 'unavailable'],
    [coded('08006'), 'unavailable'], // connection failure
    [coded('53300'), 'unavailable'], // too many connections
    [coded('53200'), 'unavailable'], // out of memory
    [coded('53100'), 'storage-full'], // disk full
    [coded('55000'), 'unavailable'], // e.g. a database that does not allow connections
    [coded('55006'), 'unavailable'], // object in use
    [coded('55P03'), 'unavailable'], // lock_timeout
    [coded('57014'), 'unavailable'], // statement_timeout
    [coded('57P01'), 'unavailable'], // admin shutdown
    [coded('57P04'), 'unavailable'], // database dropped
    [coded('58030'), 'unavailable'], // I/O error
    [coded('28P01'), 'unavailable'], // password refused
    [coded('3D000'), 'unavailable'], // no such database
    [coded('25006'), 'unavailable'], // a read-only standby, mid-failover
    [new Error('Query read timeout'), 'unavailable'],
    [coded('42601'), undefined], // syntax error
    [coded('23505'), undefined], // unique violation
    [coded('22021'), undefined], // invalid byte sequence
    [coded('XX000'), undefined], // internal error
    [new Error('boom'), undefined],
    [{ code: '57014' }, undefined]
  ]
  for (const [err, code] of cases) {
    const failure = postgresFailure(err)
    assert.equal(failure?.code, code, String((err as Error).message))
    if (failure !== undefined) assert.equal(failure.cause, err, 'the cause is kept for the log')
  }
})

test('a store operation\'s failure is mapped whether its work rejects or throws before returning a promise',
  async () => {
    const down = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })
    const other = new Error('boom')
    for (const work of [async () => { throw down }, () => { throw down }]) {
      await assert.rejects(withPostgresFailures(work), (err: unknown) =>
        (err as { code?: unknown, cause?: unknown }).code === 'unavailable' && (err as Error).cause === down)
    }
    for (const work of [async () => { throw other }, () => { throw other }]) {
      await assert.rejects(withPostgresFailures(work), (err: unknown) => err === other)
    }
    assert.equal(await withPostgresFailures(async () => 7), 7)
  })

if (TEST_DATABASE_URL !== undefined) {
  const base = TEST_DATABASE_URL
  const serverPort = Number(new URL(base).port || 5432)
  /** `url` pointed at the proxy instead of the server. */
  const viaProxy = (url: string, port: number): string => {
    const parsed = new URL(url)
    parsed.port = String(port)
    return parsed.toString()
  }

  describe('PostgreSQL store', () => {
    test('instances starting together on a new schema migrate it exactly once', async (t) => {
      const { url, schema } = scratchDatabaseUrl(t)
      const stores = await Promise.all(
        Array.from({ length: 4 }, async () => await createPostgresStore({ url, poolMax: 2 })))
      t.after(async () => { await Promise.all(stores.map(async (store) => { await store.close() })) })
      const rows = await adminQuery<{ version: number }>(
        `SELECT version FROM ${schema}.plant_store_migrations ORDER BY version`)
      assert.deepEqual(rows.map((row) => row.version), migrations.map((_, i) => i + 1))
      const tables = await adminQuery<{ table_name: string }>(
        'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name', [schema])
      assert.deepEqual(tables.map((row) => row.table_name),
        ['chosen_ids', 'idempotency_keys', 'plant_store_migrations', 'plants', 'webhook_attempts', 'webhook_deliveries',
          'webhook_events', 'webhook_subscriptions'])
    })

    test('a generated id that runs into a row the sequence did not know of moves past it', async (t) => {
      const { url, schema } = scratchDatabaseUrl(t)
      const store = await createPostgresStore({ url })
      t.after(() => store.close())
      // Rows written behind the store's back (a restore, a manual insert) leave the sequence behind.
      await adminQuery(
        `INSERT INTO ${schema}.plants (id, name, created_at, updated_at) VALUES (1, 'restored', 0, 0), ` +
          '(2, \'restored\', 0, 0)')
      assert.equal((await store.plants.create({ name: 'generated' })).item.id, 3n)
      assert.equal((await store.plants.create({ name: 'next' })).item.id, 4n)
    })

    test('a schema newer than this code stops the start with StoreOpenError', async (t) => {
      const { url, schema } = scratchDatabaseUrl(t)
      await (await createPostgresStore({ url })).close()
      await adminQuery(`INSERT INTO ${schema}.plant_store_migrations (version) VALUES ($1)`, [migrations.length + 1])
      await assert.rejects(createPostgresStore({ url }), (err: unknown) => {
        assert.ok(err instanceof StoreOpenError)
        assert.match(err.message, /newer than this plant-store/)
        return true
      })
    })

    test('a database that cannot be reached at start-up is an error, not a hang', async (t) => {
      const proxy = await startTcpProxy(serverPort)
      t.after(() => proxy.close())
      await proxy.down()
      await assert.rejects(createPostgresStore({ url: viaProxy(base, proxy.port) }),
        (err: unknown) => err instanceof StoreOpenError && isConnectionError(err.cause))
    })

    test('when the database goes away: unavailable errors, idle errors do not crash, and it ' +
      'recovers when it returns', async (t) => {
      const proxy = await startTcpProxy(serverPort)
      t.after(() => proxy.close())
      const { url } = scratchDatabaseUrl(t)
      let idleError: (err: Error) => void = () => {}
      const idleErrorSeen = new Promise<Error>((resolve) => { idleError = resolve })
      const store = await createPostgresStore({
        url: viaProxy(url, proxy.port),
        poolMax: 3,
        connectTimeoutMs: 2000,
        onIdleError: (err) => { idleError(err) }
      })
      t.after(() => store.close())
      const { item: plant } = await store.plants.create({ name: 'survivor' })

      await proxy.down()
      // The pooled connection the proxy cut is reported, not thrown (an unhandled 'error' would end this process).
      assert.equal(isConnectionError(await idleErrorSeen), true)
      const unavailable = (err: unknown): boolean => {
        assert.equal((err as { code?: string }).code, 'unavailable')
        assert.equal((err as Error).message, 'The database is unavailable, retry shortly')
        return true
      }
      await assert.rejects(store.ping(), unavailable)
      await assert.rejects(store.plants.get(plant.id), unavailable)
      await assert.rejects(store.plants.create({ name: 'lost' }), unavailable)
      await assert.rejects(store.plants.delete(plant.id, ['"etag"']), unavailable)

      await proxy.up()
      await store.ping()
      assert.deepEqual(await store.plants.get(plant.id), plant)
      assert.equal((await store.plants.list({ limit: 10 })).items.length, 1, 'the failed create left nothing behind')
    })

    test('terminated sessions: each call either succeeds or is unavailable, and the store recovers', async (t) => {
      const { url } = scratchDatabaseUrl(t)
      const name = `plant-store-test-${randomBytes(6).toString('hex')}`
      const store: Store = await createPostgresStore({
        url: withApplicationName(url, name),
        poolMax: 3,
        onIdleError: () => {}
      })
      t.after(() => store.close())
      const { item: plant } = await store.plants.create({ name: 'survivor' })
      await Promise.all([store.ping(), store.ping(), store.ping()])

      assert.ok(await terminateSessions(name) >= 1)
      const outcomes = await Promise.allSettled(
        [store.ping(), store.plants.get(plant.id), store.plants.list({ limit: 1 })])
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected') {
          assert.equal((outcome.reason as { code?: string }).code, 'unavailable', String(outcome.reason))
        }
      }
      await store.ping()
      assert.deepEqual(await store.plants.get(plant.id), plant)
    })
  })
}
