import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { describe, test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import pg from 'pg'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/main/app.js'
import { loadConfig } from '../../src/config/load-config.js'
import { FILE_CHECK_INTERVAL_MS } from '../../src/store/sqlite/failures.js'
import { AUTH, buildTestApp, TOKEN } from '../helpers/app.js'
import { limitFileSize, smallDisk } from '../helpers/faults.js'
import { assertError, createPlant } from '../helpers/plants.js'
import { until } from '../helpers/webhook-receiver.js'
import {
  adminQuery, scratchDatabase, scratchDatabaseUrl, terminateDatabaseSessions, TEST_DATABASE_URL, withSchema
} from '../helpers/postgres.js'

const UNAVAILABLE = 'The database is unavailable, retry shortly'

/** A 503 for a database that cannot be used: the Error shape and `Retry-After: 5`. */
function assertUnavailable (res: LightMyRequestResponse, message = UNAVAILABLE): void {
  assertError(res, 503, message)
  assert.equal(res.headers['retry-after'], '5')
}

interface LogLine { level: number, msg: string, code?: string }

/** An app on `env` whose log lines are kept, closed when the test ends. */
async function appWithLog (t: TestContext, env: NodeJS.ProcessEnv): Promise<{ app: FastifyInstance, log: LogLine[] }> {
  const log: LogLine[] = []
  const logStream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') log.push(JSON.parse(line) as LogLine)
      done()
    }
  })
  const app = await buildApp(loadConfig({ API_TOKENS: TOKEN, LOG_LEVEL: 'info', MAX_EVENT_LOOP_DELAY_MS: '0', ...env }),
    { logStream })
  t.after(() => app.close())
  await app.ready()
  return { app, log }
}

const tempDatabaseFile = (t: TestContext): string => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-api-failures-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return join(dir, 'plants.db')
}

const post = (name: string) => ({ method: 'POST' as const, url: '/plants', headers: AUTH, payload: { name } })

describe('SQLite under a running server', () => {
  test('the database file deleted: writes, reads and /health answer 503 with Retry-After, logged once', async (t) => {
    const file = tempDatabaseFile(t)
    const { app, log } = await appWithLog(t, { DATABASE_URL: file })
    const { plant } = await createPlant(app, { name: 'before' })
    rmSync(file)
    // Requests look at most every FILE_CHECK_INTERVAL_MS (/health every time): the next look is due.
    await sleep(FILE_CHECK_INTERVAL_MS + 5)

    assertUnavailable(await app.inject(post('never acknowledged')))
    assertUnavailable(await app.inject({ method: 'DELETE', url: `/plants/${plant.id}`, headers: AUTH }))
    assertUnavailable(await app.inject({ url: `/plants/${plant.id}`, headers: AUTH }))
    assertUnavailable(await app.inject({ url: '/health' }), 'The database does not answer')
    assertUnavailable(await app.inject({ url: '/health' }), 'The database does not answer')
    assertUnavailable(await app.inject(post('still not')))
    const lost = log.filter((line) => line.msg.startsWith('the database file was deleted or replaced'))
    assert.deepEqual(lost.map((line) => [line.level, line.msg]),
      [[50, 'the database file was deleted or replaced: writes, reads and /health answer 503 until a restart']])
  })

  test('a full disk: writes answer 507, /health 503 with Retry-After until space is back, then ' +
    'it recovers by itself', async (t) => {
    const disk = smallDisk(t, 1024 * 1024)
    if (disk === undefined) {
      t.skip('mounting a tmpfs needs root')
      return
    }
    const file = join(disk.dir, 'plants.db')
    const { app, log } = await appWithLog(t, { DATABASE_URL: file })
    // The migrations' pages go into the database file before the disk fills: the checkpoint thread
    // doing it afterwards would grow the file into the room the first writes are meant to find.
    const settle = new Database(file)
    settle.pragma('wal_checkpoint(TRUNCATE)')
    settle.close()
    // A WAL the checkpointer has emptied starts over in place, where a write needs no new space. A
    // read held open keeps it from starting over, so every write needs room the disk does not have.
    const reader = new Database(file, { readonly: true })
    t.after(() => reader.close())
    reader.exec('BEGIN')
    reader.prepare('SELECT count(*) FROM plants').get()
    disk.fill(48 * 1024)
    let res: LightMyRequestResponse | undefined
    let created = 0
    for (; created < 100; created++) {
      res = await app.inject(post(`plant ${created} ${'x'.repeat(80)}`))
      if (res.statusCode !== 201) break
    }
    assert.ok(res !== undefined)
    assertError(res, 507, 'The database storage is full; nothing was written')
    assert.equal(res.headers['retry-after'], undefined)
    disk.fill(0)
    assertError(await app.inject(post('again')), 507, 'The database storage is full; nothing was written')
    const listed = await app.inject({ url: '/plants?limit=100', headers: AUTH })
    assert.equal(listed.json<unknown[]>().length, created, 'the refused writes left nothing')
    const health = await app.inject({ url: '/health' })
    assertError(health, 503, 'The database storage is full')
    assert.equal(health.headers['retry-after'], '5')
    assert.equal((await app.inject({ url: '/plants/1', headers: AUTH })).statusCode, 200, 'reads go on')

    reader.close()
    disk.free()
    assert.deepEqual((await app.inject({ url: '/health' })).json(), { status: 'ok' })
    assert.equal((await app.inject(post('after'))).statusCode, 201)
    assert.deepEqual(log.filter((line) => line.msg.startsWith('database writes')).map(
      (line) => [line.level, line.msg, line.code]),
    [[50, 'database writes fail', 'storage-full'], [30, 'database writes work again', 'storage-full']])
  })

  test('I/O errors: writes and /health answer 503 with Retry-After while they last, then ' +
    'it recovers by itself', async (t) => {
    const app = await buildTestApp(t, { DATABASE_URL: tempDatabaseFile(t) })
    await createPlant(app, { name: 'before' })
    const lift = limitFileSize(t, 4096)
    if (lift === undefined) {
      t.skip('prlimit (util-linux) is not available')
      return
    }
    const answers = [await app.inject(post('refused')), await app.inject({ url: '/health' })]
    lift()
    assertUnavailable(answers[0] as LightMyRequestResponse)
    assertUnavailable(answers[1] as LightMyRequestResponse, 'The database does not answer')
    assert.deepEqual((await app.inject({ url: '/health' })).json(), { status: 'ok' })
    assert.equal((await app.inject(post('after'))).statusCode, 201)
  })
})

if (TEST_DATABASE_URL !== undefined) {
  describe('PostgreSQL under a running server', () => {
    test('a database that stops accepting connections (SQLSTATE 55000): 503 with ' +
      'Retry-After, then it recovers', async (t) => {
      const database = await scratchDatabase(t)
      const app = await buildTestApp(t, {
        DATABASE_URL: withSchema(database.url, 'plants'),
        PG_CONNECT_TIMEOUT_MS: '2000'
      })
      const { plant } = await createPlant(app, { name: 'before' })

      await adminQuery(`ALTER DATABASE ${database.name} ALLOW_CONNECTIONS false`)
      assert.ok(await terminateDatabaseSessions(database.name) >= 1)
      // The first request may meet a pooled connection that was cut; every one after needs a new one.
      const first = await app.inject(post('refused'))
      assertUnavailable(first)
      const refused = await app.inject(post('refused'))
      assertUnavailable(refused)
      assertUnavailable(await app.inject({ url: `/plants/${plant.id}`, headers: AUTH }))
      assertUnavailable(await app.inject({ url: '/health' }), 'The database does not answer')

      await adminQuery(`ALTER DATABASE ${database.name} ALLOW_CONNECTIONS true`)
      // A pooler in front (.ci/run's pooled pass) tries a refused login again only after its server_login_retry.
      await until('the database answers again', async () => (await app.inject({ url: '/health' })).statusCode === 200,
        30_000)
      assert.deepEqual((await app.inject({ url: '/health' })).json(), { status: 'ok' })
      assert.equal((await app.inject(post('after'))).statusCode, 201)
      assert.equal((await app.inject({ url: '/plants', headers: AUTH })).json<unknown[]>().length, 2,
        'the refused creates left nothing')
    })

    test('a row locked elsewhere: the write answers 503 with Retry-After after PG_STATEMENT_TIMEOUT_MS, ' +
      'never waits for ever', async (t) => {
      const { url, schema } = scratchDatabaseUrl(t)
      const app = await buildTestApp(t, { DATABASE_URL: url, PG_STATEMENT_TIMEOUT_MS: '300' })
      const { plant, etag } = await createPlant(app, { name: 'locked' })
      const holder = new pg.Client({ connectionString: TEST_DATABASE_URL })
      await holder.connect()
      t.after(() => holder.end())
      await holder.query('BEGIN')
      await holder.query(`SELECT id FROM ${schema}.plants WHERE id = $1 FOR UPDATE`, [String(plant.id)])

      const started = Date.now()
      assertUnavailable(await app.inject({ method: 'DELETE', url: `/plants/${plant.id}`, headers: AUTH }))
      assertUnavailable(
        await app.inject({
          method: 'PUT',
          url: `/plants/${plant.id}`,
          headers: { ...AUTH, 'if-match': etag },
          payload: { name: 'x' }
        }))
      const elapsed = Date.now() - started
      assert.ok(elapsed >= 500 && elapsed < 5000, `two bounded waits of 300 ms took ${elapsed} ms`)
      assert.equal((await app.inject({ url: `/plants/${plant.id}`, headers: AUTH })).statusCode, 200,
        'reads do not wait for the lock')
      assert.deepEqual((await app.inject({ url: '/health' })).json(), { status: 'ok' })

      await holder.query('ROLLBACK')
      assert.equal(
        (await app.inject(
          { method: 'DELETE', url: `/plants/${plant.id}`, headers: { ...AUTH, 'if-match': etag } })).statusCode, 204)
    })
  })
}
