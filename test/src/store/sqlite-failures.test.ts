import assert from 'node:assert/strict'
import { copyFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { ServiceError, type ErrorCode } from '../../../src/lib/errors.js'
import { FILE_CHECK_INTERVAL_MS, sqliteFailure } from '../../../src/store/sqlite/failures.js'
import { createSqliteStore, type SqliteSynchronous } from '../../../src/store/sqlite/sqlite-store.js'
import type { Store } from '../../../src/store/contract.js'
import { limitFileSize, smallDisk } from '../../helpers/faults.js'
import { tempDatabaseFile } from '../../helpers/cleanup.js'
import { settled } from './conformance.js'

interface Logged { level: 'error' | 'info', message: string, code?: unknown }

/** A store on `filename` whose state changes are recorded in `logged`; closed when the test ends. */
function openStore (t: TestContext, filename: string,
  synchronous: SqliteSynchronous = 'full'): { store: Store, logged: Logged[] } {
  const logged: Logged[] = []
  const store = createSqliteStore({
    filename,
    synchronous,
    log: {
      error: (details,
        message) => { logged.push({ level: 'error', message, code: (details as { code?: unknown }).code }) },
      info: (details,
        message) => { logged.push({ level: 'info', message, code: (details as { code?: unknown }).code }) }
    }
  })
  t.after(() => store.close())
  return { store, logged }
}

/**
 * The store's own lines, without the checkpoint thread's: it meets a lost file, a full disk or a size
 * limit too, in its own time and its own words (checkpointer.test.ts), so whether it has spoken yet
 * is a matter of timing.
 */
const storeLines = (logged: Logged[]): Logged[] =>
  logged.filter(({ message }) => !/^(a WAL checkpoint failed|WAL checkpoints work again)/.test(message))

const tempFile = (t: TestContext): string => tempDatabaseFile(t, 'plant-store-failures-')

test('SQLite failures are told apart: full, unavailable, and everything else stays a bug', () => {
  const sqlite = (code: string): Error => new Database.SqliteError(`${code} happened`, code)
  const cases: Array<[unknown, ErrorCode | undefined]> = [
    [sqlite('SQLITE_FULL'), 'storage-full'],
    [sqlite('SQLITE_IOERR'), 'unavailable'],
    [sqlite('SQLITE_IOERR_WRITE'), 'unavailable'],
    [sqlite('SQLITE_IOERR_FSYNC'), 'unavailable'],
    [sqlite('SQLITE_BUSY_SNAPSHOT'), 'unavailable'],
    [sqlite('SQLITE_CANTOPEN'), 'unavailable'],
    [sqlite('SQLITE_READONLY_DBMOVED'), 'unavailable'],
    [Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO', syscall: 'fdatasync' }), 'unavailable'],
    [sqlite('SQLITE_CONSTRAINT_PRIMARYKEY'), undefined],
    [sqlite('SQLITE_CORRUPT'), undefined],
    [sqlite('SQLITE_ERROR'), undefined],
    [new TypeError('a bug'), undefined],
    ['SQLITE_FULL', undefined]
  ]
  for (const [err, code] of cases) {
    const error = sqliteFailure(err)
    assert.equal(error?.code, code, String(err))
    if (error !== undefined) assert.equal(error.cause, err, 'the cause is kept for the log')
  }
})

for (const [how, replace] of [
  ['deleted', (file: string) => { rmSync(file) }],
  ['replaced by another file renamed over it', (file: string) => {
    copyFileSync(file, `${file}.copy`)
    renameSync(`${file}.copy`, file)
  }],
  ['left without its WAL', (file: string) => { rmSync(`${file}-wal`) }],
  ['moved away with its folder, a file in the folder\'s place', (file: string, t: TestContext) => {
    const folder = dirname(file)
    renameSync(folder, `${folder}.moved`)
    t.after(() => { rmSync(`${folder}.moved`, { recursive: true, force: true }) })
    writeFileSync(folder, 'not a folder')
  }]
] as const) {
  test(`a database file ${how} while open: nothing more is acknowledged, reads and ` +
    'ping fail, logged once', async (t) => {
    const file = tempFile(t)
    const { store, logged } = openStore(t, file)
    const { item: plant } = await store.plants.create({ name: 'before' })
    replace(file, t)
    // Writes and reads look at most every FILE_CHECK_INTERVAL_MS: the next look after that is due.
    await sleep(FILE_CHECK_INTERVAL_MS + 5)
    // Writes of the same batch all fail: none of them is acknowledged into the file that is gone.
    const writes = await Promise.all(
      [store.plants.create({ name: 'lost' }), store.plants.update(plant.id, { name: 'lost' }),
        store.plants.delete(plant.id)].map(settled))
    assert.deepEqual(writes, ['unavailable', 'unavailable', 'unavailable'])
    assert.equal(await settled(store.ping()), 'unavailable')
    assert.equal(await settled(store.plants.get(plant.id)), 'unavailable')
    assert.equal(await settled(store.plants.list({ limit: 1 })), 'unavailable')
    assert.equal(await settled(store.plants.create({ name: 'later' })), 'unavailable',
      'it stays so: a restart opens the path afresh')
    // The store's report is what must come once.
    assert.deepEqual(storeLines(logged).map(({ level, message }) => [level, message]),
      [['error', 'the database file was deleted or replaced: writes, reads and /health answer 503 until a restart']])
  })
}

test('a read notices a deleted file by itself', async (t) => {
  const file = tempFile(t)
  const { store } = openStore(t, file)
  await store.plants.create({ name: 'before' })
  rmSync(file)
  await sleep(FILE_CHECK_INTERVAL_MS + 5)
  assert.equal(await settled(store.plants.get(1n)), 'unavailable')
})

test('/health looks at the file every time', async (t) => {
  const file = tempFile(t)
  const { store } = openStore(t, file)
  await store.plants.create({ name: 'before' })
  rmSync(file)
  assert.equal(await settled(store.ping()), 'unavailable')
})

test(':memory: has no file to lose', async (t) => {
  const { store } = openStore(t, ':memory:')
  await store.plants.create({ name: 'in memory' })
  await store.ping()
})

for (const synchronous of ['full', 'normal'] as const) {
  test(`a full disk (${synchronous}): storage-full, ping fails until space is back, then writes work again ` +
    'and survive a restart', async (t) => {
    const disk = smallDisk(t, 1024 * 1024)
    if (disk === undefined) {
      t.skip('mounting a tmpfs needs root')
      return
    }
    const file = join(disk.dir, 'plants.db')
    const { store, logged } = openStore(t, file, synchronous)
    const acknowledged: string[] = []
    disk.fill(48 * 1024)
    let refused: ErrorCode | 'ok' = 'ok'
    for (let i = 0; i < 1000 && refused === 'ok'; i++) {
      const name = `plant ${i} ${'x'.repeat(80)}`
      refused = await settled(store.plants.create({ name }).then(() => { acknowledged.push(name) }))
    }
    assert.equal(refused, 'storage-full')
    // A whole batch fails with the transaction SQLite rolled back, not only the write that hit the wall.
    assert.deepEqual(
      await Promise.all([store.plants.create({ name: 'a' }), store.plants.create({ name: 'b' })].map(settled)),
      ['storage-full', 'storage-full'])
    assert.equal(await settled(store.ping()), 'storage-full')
    assert.equal(await settled(store.ping()), 'storage-full', 'still full: the probe write does not fit either')
    assert.equal((await store.plants.list({ limit: 100 })).items.length, acknowledged.length, 'reads go on')

    disk.free()
    await store.ping()
    const { item: plant } = await store.plants.create({ name: 'after' })
    acknowledged.push(plant.name)
    assert.deepEqual(storeLines(logged).map(({ level, message, code }) => [level, message, code]),
      [['error', 'database writes fail', 'storage-full'], ['info', 'database writes work again', 'storage-full']])

    await store.close()
    const reopened = createSqliteStore({ filename: file })
    t.after(() => reopened.close())
    assert.deepEqual((await reopened.plants.list({ limit: 100 })).items.map((p) => p.name), acknowledged)
    const check = new Database(file, { readonly: true })
    assert.equal(check.pragma('integrity_check', { simple: true }), 'ok')
    check.close()
  })
}

test('closing on a full disk keeps the WAL (the checkpoint fails, logged): every acknowledged write is ' +
  'there at the next start', async (t) => {
  const disk = smallDisk(t, 1024 * 1024)
  if (disk === undefined) {
    t.skip('mounting a tmpfs needs root')
    return
  }
  const file = join(disk.dir, 'plants.db')
  const { store, logged } = openStore(t, file, 'normal')
  const acknowledged: bigint[] = []
  for (let i = 0; i < 50; i++) {
    acknowledged.push((await store.plants.create({ name: `plant ${i} ${'x'.repeat(80)}` })).item.id)
  }
  // The WAL holds them; folding it into the main file needs room the disk no longer has.
  disk.fill(4 * 1024)
  await store.close()
  assert.deepEqual(storeLines(logged).map(({ level, message }) => [level, message]),
    [['error', 'the database could not be checkpointed at close; its WAL is kept and replayed at the next start']])
  disk.free()
  const reopened = createSqliteStore({ filename: file })
  t.after(() => reopened.close())
  assert.deepEqual((await reopened.plants.list({ limit: 100 })).items.map((plant) => plant.id), acknowledged)
})

test('I/O errors (writes past a file size limit): unavailable, ping fails, and it recovers by itself', async (t) => {
  const file = tempFile(t)
  const { store, logged } = openStore(t, file)
  for (let i = 0; i < 3; i++) await store.plants.create({ name: `plant ${i}` })
  // Every write beyond the WAL's current end now fails with EFBIG (SQLITE_IOERR_WRITE).
  const lift = limitFileSize(t, 4096)
  if (lift === undefined) {
    t.skip('prlimit (util-linux) is not available')
    return
  }
  const refused = await store.plants.create({ name: 'refused' }).then(() => undefined, (err: unknown) => err)
  lift()
  assert.ok(refused instanceof ServiceError)
  assert.equal(refused.code, 'unavailable')
  assert.equal((refused.cause as { code?: string }).code, 'SQLITE_IOERR_WRITE')
  assert.equal(await settled(store.ping()), 'ok', 'the limit is gone: the probe write succeeds')
  assert.equal((await store.plants.create({ name: 'after' })).item.id, 4n)
  assert.deepEqual(storeLines(logged).map(({ level, code }) => [level, code]),
    [['error', 'unavailable'], ['info', 'unavailable']])
})

test('I/O errors: ping fails while they last', async (t) => {
  const file = tempFile(t)
  const { store } = openStore(t, file)
  await store.plants.create({ name: 'plant' })
  const lift = limitFileSize(t, 4096)
  if (lift === undefined) {
    t.skip('prlimit (util-linux) is not available')
    return
  }
  const outcomes = [await settled(store.plants.create({ name: 'refused' })), await settled(store.ping()),
    await settled(store.ping())]
  lift()
  assert.deepEqual(outcomes, ['unavailable', 'unavailable', 'unavailable'])
  await store.ping()
})
