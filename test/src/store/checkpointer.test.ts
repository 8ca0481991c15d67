import assert from 'node:assert/strict'
import { existsSync, statSync } from 'node:fs'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { startCheckpointer, type CheckpointReport } from '../../../src/store/sqlite/checkpointer.js'
import { configureConnection } from '../../../src/store/sqlite/connection.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { cleanupStack, tempDatabaseFile } from '../../helpers/cleanup.js'

/**
 * `found()` resolves with the first report `accept` takes. An idle checkpoint thread does not hold
 * the process open, so a timer does while a test waits (its timeout ends a wait that never ends).
 */
function nextReport (accept: (report: CheckpointReport) => boolean): {
  onCheckpoint: (report: CheckpointReport) => void,
  found: () => Promise<CheckpointReport>
} {
  let settle: (report: CheckpointReport) => void = () => {}
  const report = new Promise<CheckpointReport>((resolve) => { settle = resolve })
  const found = async (): Promise<CheckpointReport> => {
    const waiting = setInterval(() => {}, 1000)
    try {
      return await report
    } finally {
      clearInterval(waiting)
    }
  }
  return { onCheckpoint: (candidate) => { if (accept(candidate)) settle(candidate) }, found }
}

/** A connection to a fresh file in WAL mode with one table, closed when the test ends. */
function walDatabase (t: Parameters<typeof cleanupStack>[0]): {
  db: Database.Database,
  file: string,
  after: (fn: () => unknown) => void
} {
  const { after } = cleanupStack(t)
  const file = tempDatabaseFile({ after })
  const db = configureConnection(new Database(file))
  db.exec('CREATE TABLE t (x TEXT)')
  after(() => { db.close() })
  return { db, file, after }
}

test('the store\'s WAL is checkpointed by the worker thread as it is written, and the store\'s own connection ' +
  'no longer checkpoints', { timeout: 10_000 }, async (t) => {
  const { db, file, after } = walDatabase(t)
  const {
    onCheckpoint,
    found
  } = nextReport(
    (report) => report.thread === 'worker' && !('error' in report) && report.frames > 0 &&
        report.checkpointed === report.frames)
  // The WAL starts empty: else the thread's first report could be of CREATE TABLE's frames (on a busy machine).
  db.pragma('wal_checkpoint(TRUNCATE)')
  const checkpointer = startCheckpointer(db, file, { intervalMs: 10, onCheckpoint })
  after(async () => { await checkpointer.close() })
  assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 1000n,
    'SQLite checkpoints by itself until the thread is ready')
  assert.equal(await checkpointer.ready, true)
  assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 0n)
  db.prepare('INSERT INTO t VALUES (?)').run('x'.repeat(10_000))
  const report = await found()
  assert.ok(!('error' in report) && report.frames >= 3, 'the 10 kB row took several pages')
})

test('once the WAL holds catchUpPages frames the thread could not copy (a reader held them), the ' +
  'event loop copies them', { timeout: 10_000 }, async (t) => {
  const { db, file, after } = walDatabase(t)
  // A reader's open snapshot keeps the thread's checkpoint from copying the frames written after it.
  const reader = new Database(file)
  after(() => { reader.close() })
  const reports: CheckpointReport[] = []
  const { onCheckpoint, found } = nextReport((report) => report.thread === 'loop')
  const checkpointer = startCheckpointer(db, file, {
    intervalMs: 10,
    catchUpPages: 3,
    onCheckpoint: (report) => {
      reports.push(report)
      // Released as the thread reports falling short: the loop's checkpoint, which follows at once, can copy it all.
      if (report.thread === 'worker' && !('error' in report) && report.checkpointed < report.frames &&
        reader.inTransaction) reader.exec('COMMIT')
      onCheckpoint(report)
    }
  })
  after(async () => { await checkpointer.close() })
  assert.equal(await checkpointer.ready, true)
  reader.exec('BEGIN')
  reader.prepare('SELECT count(*) FROM t').get()
  db.prepare('INSERT INTO t VALUES (?)').run('x'.repeat(10_000))
  const loop = await found()
  assert.ok(!('error' in loop) && loop.frames >= 3 && loop.checkpointed === loop.frames, 'the loop copied every frame')
  const asked = reports.filter((report) => report.thread === 'worker').at(-1)
  assert.ok(asked !== undefined && !('error' in asked) && asked.frames >= 3 && asked.checkpointed < asked.frames,
    'after the thread fell short')
})

test('a WAL past catchUpPages is checkpointed on the loop even when the thread ' +
  'copied every frame it saw', { timeout: 10_000 }, async (t) => {
  const { db, file, after } = walDatabase(t)
  const reports: CheckpointReport[] = []
  const { onCheckpoint, found } = nextReport((report) => report.thread === 'loop')
  const checkpointer = startCheckpointer(db, file, {
    intervalMs: 10,
    catchUpPages: 3,
    onCheckpoint: (report) => { reports.push(report); onCheckpoint(report) }
  })
  after(async () => { await checkpointer.close() })
  assert.equal(await checkpointer.ready, true)
  db.prepare('INSERT INTO t VALUES (?)').run('x'.repeat(10_000))
  const loop = await found()
  // Under load the loop commits more while the thread copies: its "every frame" is old news.
  const asked = reports.filter((report) => report.thread === 'worker').at(-1)
  assert.ok(asked !== undefined && !('error' in asked) && asked.frames >= 3 && asked.checkpointed === asked.frames,
    'the thread had copied all it saw')
  assert.ok(!('error' in loop) && loop.checkpointed === loop.frames)
})

test('under steady writes the WAL starts over every catchUpPages or so, instead of growing for ' +
  'as long as they last', { timeout: 30_000 }, async (t) => {
  const { after } = cleanupStack(t)
  const file = tempDatabaseFile({ after })
  const catchUpPages = 100
  let largest = 0
  const store = createSqliteStore({
    filename: file,
    synchronous: 'normal',
    checkpoint: {
      intervalMs: 5,
      catchUpPages,
      onCheckpoint: (report) => { if (!('error' in report)) largest = Math.max(largest, report.frames) }
    }
  })
  after(async () => { await store.close() })
  // 40,000 creates, 32 at a time: about 6,000 WAL frames, written without a pause (the old rule left a
  // WAL of 3,400-6,600 pages here; this one restarts it every few hundred, with room for a slow machine).
  let left = 40_000
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (left-- > 0) await store.plants.create({ name: 'Monstera', tag: 'tropical' })
  }))
  const pages = statSync(`${file}-wal`).size / 4096
  assert.ok(largest >= catchUpPages, `the WAL reached catchUpPages (largest seen: ${largest} frames)`)
  assert.ok(pages < 20 * catchUpPages, `the WAL file grew to ${Math.round(pages)} pages`)
})

test('a WAL below catchUpPages is never checkpointed on the event loop', { timeout: 10_000 }, async (t) => {
  const { db, file, after } = walDatabase(t)
  const reports: CheckpointReport[] = []
  const {
    onCheckpoint,
    found
  } = nextReport((report) => report.thread === 'worker' && !('error' in report) && report.frames > 0)
  const checkpointer = startCheckpointer(db, file, {
    intervalMs: 10,
    onCheckpoint: (report) => { reports.push(report); onCheckpoint(report) }
  })
  after(async () => { await checkpointer.close() })
  assert.equal(await checkpointer.ready, true)
  db.prepare('INSERT INTO t VALUES (?)').run('small')
  await found()
  assert.deepEqual(reports.filter((report) => report.thread === 'loop'), [])
})

test('when the thread cannot open the database, the connection checkpoints by itself again and ' +
  'the log says so once', { timeout: 10_000 }, async (t) => {
  const { db, file } = walDatabase(t)
  const errors: string[] = []
  const log = { error: (_details: object, message: string) => { errors.push(message) }, info: () => {} }
  db.pragma('wal_autocheckpoint = 0')
  const checkpointer = startCheckpointer(db, `${file}.missing`, { log })
  assert.equal(await checkpointer.ready, false)
  assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 1000n)
  assert.deepEqual(errors,
    ['the checkpoint thread could not open the database: SQLite checkpoints the WAL on the event loop again'])
  await checkpointer.close()
})

test('one thread checkpoints every database of the process, each on its own, and ' +
  'outlives them for the next', { timeout: 10_000 }, async (t) => {
  const [first, second] = [walDatabase(t), walDatabase(t)]
  const {
    onCheckpoint,
    found
  } = nextReport((report) => report.thread === 'worker' && !('error' in report) && report.frames > 0)
  const one = startCheckpointer(first.db, first.file, { intervalMs: 10 })
  const two = startCheckpointer(second.db, second.file, { intervalMs: 10, onCheckpoint })
  t.after(async () => { await Promise.all([one.close(), two.close()]) })
  assert.deepEqual(await Promise.all([one.ready, two.ready]), [true, true])
  assert.equal(two.threadId, one.threadId)
  assert.ok(one.threadId > 0, 'a worker thread, not the main one')

  // Closing one database leaves the other checkpointed.
  await one.close()
  second.db.prepare('INSERT INTO t VALUES (?)').run('x'.repeat(10_000))
  await found()
  await two.close()
  // With none left, the next database still gets the same thread.
  const third = walDatabase(t)
  const again = startCheckpointer(third.db, third.file, { intervalMs: 10 })
  t.after(async () => { await again.close() })
  assert.equal(await again.ready, true)
  assert.equal(again.threadId, one.threadId)
})

test('a closed store leaves no WAL behind: the thread\'s connection is closed before the ' +
  'store\'s last checkpoint', { timeout: 10_000 }, async (t) => {
  const { after } = cleanupStack(t)
  const file = tempDatabaseFile({ after })
  const { onCheckpoint, found } = nextReport((report) => report.thread === 'worker')
  const store = createSqliteStore({
    filename: file,
    synchronous: 'normal',
    checkpoint: { intervalMs: 10, onCheckpoint }
  })
  for (let i = 0; i < 20; i++) await store.plants.create({ name: `plant ${i}` })
  await found()
  await store.close()
  assert.equal(existsSync(`${file}-wal`), false)
})
