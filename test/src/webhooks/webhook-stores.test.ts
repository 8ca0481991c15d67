import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { createPostgresWebhookStore } from '../../../src/store/postgres/webhook-store.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { createSqliteWebhookStore, enqueueSqliteEvent, openSqliteWebhookDatabase } from '../../../src/store/sqlite/webhook-store.js'
import { StoreOpenError } from '../../../src/errors.js'
import { WEBHOOK_EVENT_TYPES } from '../../../src/webhooks/events.js'
import { cleanupStack, type Cleanup } from '../../helpers/cleanup.js'
import { scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { plant } from './store-conformance.js'

const record = { owner: 'a'.repeat(64), url: 'https://hooks.example.com/', events: [...WEBHOOK_EVENT_TYPES], disabled: false, secret: 'whsec_c2VjcmV0' }

function tempFile (cleanup: Cleanup): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-webhook-stores-'))
  cleanup.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return join(dir, 'plants.db')
}

test('SQLite: a database the plant store has not migrated yet is refused', (t) => {
  const cleanup = cleanupStack(t)
  const filename = tempFile(cleanup)
  const bare = new Database(filename)
  bare.close()
  const db = openSqliteWebhookDatabase(filename)
  cleanup.after(() => { db.close() })
  assert.throws(() => createSqliteWebhookStore({ db }), (err: unknown) =>
    err instanceof StoreOpenError && /has no webhook tables yet: open the plant store on it first/.test(err.message))
})

test('SQLite: writes go through the given runner (the group commit), reads through afterDurable', async (t) => {
  const cleanup = cleanupStack(t)
  const filename = tempFile(cleanup)
  const plants = createSqliteStore({ filename, synchronous: 'normal' })
  cleanup.after(() => plants.close())
  const log: string[] = []
  const store = createSqliteWebhookStore({
    db: openSqliteWebhookDatabase(filename),
    ownsDb: true,
    write: async (transaction) => { log.push('write'); return transaction() },
    afterDurable: async (value) => { log.push('read'); return value }
  })
  cleanup.after(() => store.close())
  const { id } = await store.createSubscription(record, 1000)
  await store.getSubscription(record.owner, id)
  await store.listSubscriptions(record.owner, { limit: 1 })
  await store.enqueue({ type: 'plant.created', plant: plant(1n) }, 1000)
  await store.listDeliveries(record.owner, id, { limit: 1 })
  // The listing first fans the waiting event out (a write), then reads.
  assert.deepEqual(log, ['write', 'read', 'read', 'write', 'write', 'read'])
  await store.listDeliveries(record.owner, id, { limit: 1 })
  assert.deepEqual(log.slice(6), ['read'], 'nothing left to fan out: a read only')
})

test('SQLite: enqueueSqliteEvent joins the transaction of a plant write on the same connection', async (t) => {
  const cleanup = cleanupStack(t)
  const filename = tempFile(cleanup)
  const plants = createSqliteStore({ filename, synchronous: 'normal' })
  cleanup.after(() => plants.close())
  const db = openSqliteWebhookDatabase(filename)
  const store = createSqliteWebhookStore({ db, ownsDb: true })
  cleanup.after(() => store.close())
  await store.createSubscription(record, 1000)
  const insertPlant = db.prepare("INSERT INTO plants (name, tag, created_at, updated_at) VALUES ('Fern', NULL, 1, 1)")
  const createWithEvent = db.transaction((fail: boolean) => {
    insertPlant.run()
    enqueueSqliteEvent(db, { type: 'plant.created', plant: plant(1n) })
    if (fail) throw new Error('the plant write failed after its event was enqueued')
  })
  assert.throws(() => createWithEvent(true), /plant write failed/)
  const count = (table: string): bigint => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as bigint
  assert.deepEqual([count('plants'), count('webhook_events')], [0n, 0n], 'both rolled back')
  createWithEvent(false)
  assert.deepEqual([count('plants'), count('webhook_events')], [1n, 1n], 'both committed')
  const [delivery] = await store.claimDue({ lease: 'a', now: Date.now(), leaseMs: 60_000, limit: 10, perSubscription: 10, skipSubscriptions: [] })
  assert.match(delivery?.payload ?? '', /^\{"type":"plant\.created",.*"data":\{"id":1,/, 'the committed event fans out to a delivery')
  assert.equal(count('webhook_events'), 0n, 'and leaves the outbox')
})

if (TEST_DATABASE_URL !== undefined) {
  test('PostgreSQL: a schema the plant store has not migrated yet is refused', async (t) => {
    const { url } = scratchDatabaseUrl(t)
    await assert.rejects(createPostgresWebhookStore({ url }), (err: unknown) =>
      err instanceof StoreOpenError && /\(version 0\) has no webhook tables yet/.test(err.message))
  })
}
