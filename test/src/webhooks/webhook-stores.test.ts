import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import Database from 'better-sqlite3'
import pg from 'pg'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { createPostgresWebhookStore } from '../../../src/store/postgres/webhook-store.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { enqueueSqliteEvent } from '../../../src/store/sqlite/outbox.js'
import { createSqliteWebhookStore, openSqliteWebhookDatabase } from '../../../src/store/sqlite/webhook-store.js'
import { StoreOpenError } from '../../../src/lib/errors.js'
import type { Store } from '../../../src/store/contract.js'
import { PLANTS } from '../../../src/resources/plants.js'
import { resourceEvent } from '../../../src/webhooks/events.js'
import { PLANT_CREATED, PLANT_DELETED, RESOURCE_EVENT_TYPES } from '../../helpers/resources.js'
import { cleanupStack, type Cleanup } from '../../helpers/cleanup.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { plant } from './store-conformance.js'

const record = {
  owner: 'a'.repeat(64),
  url: 'https://hooks.example.com/',
  events: [...RESOURCE_EVENT_TYPES],
  disabled: false,
  secret: 'whsec_c2VjcmV0'
}

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
  await store.enqueue(resourceEvent(PLANTS, 'created', plant(1n)), 1000)
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
    enqueueSqliteEvent(db, resourceEvent(PLANTS, 'created', plant(1n)))
    if (fail) throw new Error('the plant write failed after its event was enqueued')
  })
  assert.throws(() => createWithEvent(true), /plant write failed/)
  const count = (table: string): bigint => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as bigint
  assert.deepEqual([count('plants'), count('webhook_events')], [0n, 0n], 'both rolled back')
  createWithEvent(false)
  assert.deepEqual([count('plants'), count('webhook_events')], [1n, 1n], 'both committed')
  const [delivery] = await store.claimDue({
    lease: 'a',
    now: Date.now(),
    leaseMs: 60_000,
    limit: 10,
    perSubscription: 10,
    skipSubscriptions: []
  })
  assert.match(delivery?.payload ?? '', /^\{"type":"plant\.created",.*"data":\{"id":1,/,
    'the committed event fans out to a delivery')
  assert.equal(count('webhook_events'), 0n, 'and leaves the outbox')
})

/** A plant store, and what its outbox holds (read apart from the store), for the scenarios below. */
interface OutboxUnderTest {
  plants: Store
  /** The event types waiting in the outbox, oldest first. */
  waiting: () => Promise<string[]>
}

async function sqliteOutbox (t: TestContext): Promise<OutboxUnderTest> {
  const cleanup = cleanupStack(t)
  const filename = tempFile(cleanup)
  const plants = createSqliteStore({ filename, synchronous: 'normal' })
  cleanup.after(() => plants.close())
  const outbox = openSqliteWebhookDatabase(filename)
  cleanup.after(() => { outbox.close() })
  const waiting = outbox.prepare<[], string>('SELECT event_type FROM webhook_events ORDER BY id').pluck()
  return { plants, waiting: async () => waiting.all() }
}

async function postgresOutbox (t: TestContext): Promise<OutboxUnderTest> {
  const cleanup = cleanupStack(t)
  const { url, schema } = scratchDatabaseUrl(cleanup)
  const plants = await createPostgresStore({ url })
  cleanup.after(() => plants.close())
  return {
    plants,
    waiting: async () => (await adminQuery<{ event_type: string }>(
      `SELECT event_type FROM ${schema}.webhook_events ORDER BY id`)).map((row) => row.event_type)
  }
}

async function eventsOnlyForWantedTypes (t: TestContext,
  open: (t: TestContext) => Promise<OutboxUnderTest>): Promise<void> {
  const { plants, waiting } = await open(t)
  await plants.plants.create({ name: 'Fern' })
  assert.deepEqual(await waiting(), [], 'no subscription: no event')
  const { id } = await plants.webhooks.createSubscription({ ...record, events: [PLANT_DELETED] }, Date.now())
  const fern = await plants.plants.create({ name: 'Fern' })
  assert.deepEqual(await waiting(), [], `nobody asked for ${PLANT_CREATED}`)
  await plants.plants.delete(fern.item.id)
  assert.deepEqual(await waiting(), [PLANT_DELETED])
  await plants.webhooks.updateSubscription(record.owner, id, { events: [PLANT_CREATED] }, Date.now())
  await plants.plants.create({ name: 'Ivy' })
  assert.deepEqual(await waiting(), [PLANT_DELETED, PLANT_CREATED],
    'the change of the subscription is seen by the next write')
  await plants.webhooks.updateSubscription(record.owner, id, { disabled: true }, Date.now())
  await plants.plants.create({ name: 'Moss' })
  assert.deepEqual(await waiting(), [PLANT_DELETED, PLANT_CREATED], 'a disabled subscription asks for nothing')
}

async function fanOutOnlyWhenShort (t: TestContext, open: (t: TestContext) => Promise<OutboxUnderTest>): Promise<void> {
  const { plants, waiting } = await open(t)
  const store = plants.webhooks
  const now = Date.now()
  const claim = { now, leaseMs: 60_000, limit: 1, perSubscription: 10, skipSubscriptions: [] }
  await store.createSubscription(record, now)
  await store.enqueue(resourceEvent(PLANTS, 'created', plant(1n)), now)
  const [first] = await store.claimDue({ ...claim, lease: 'a:1' })
  assert.match(first?.payload ?? '', /"id":1,/)
  assert.deepEqual(await waiting(), [], 'nothing was due: the event was fanned out')
  // The first delivery fails and is due again at once; a second event arrives.
  await store.completeDelivery({
    id: first?.id ?? 0n,
    lease: 'a:1',
    attemptedAt: now,
    status: 'pending',
    nextAttemptAt: now,
    statusCode: 500,
    disableSubscription: false,
    failingDisableBefore: 0
  })
  await store.enqueue(resourceEvent(PLANTS, 'created', plant(2n)), now)
  const [retry] = await store.claimDue({ ...claim, lease: 'a:2' })
  assert.equal(retry?.id, first?.id, 'the due retry fills the claim')
  assert.deepEqual(await waiting(), [PLANT_CREATED], 'so the new event still waits in the outbox')
  const [second] = await store.claimDue({ ...claim, lease: 'a:3' })
  assert.match(second?.payload ?? '', /"id":2,/)
  assert.deepEqual(await waiting(), [])
}

test('SQLite: a plant write records an event only when an enabled subscription asked for its type', async (t) => {
  await eventsOnlyForWantedTypes(t, sqliteOutbox)
})

test('SQLite: a claim fans events out only when fewer deliveries are due than it asks for', async (t) => {
  await fanOutOnlyWhenShort(t, sqliteOutbox)
})

if (TEST_DATABASE_URL !== undefined) {
  test('PostgreSQL: a plant write records an event only when an enabled subscription asked for its type', async (t) => {
    await eventsOnlyForWantedTypes(t, postgresOutbox)
  })

  test('PostgreSQL: on a ?schema= database both webhook pools bound a lock wait (the dispatcher\'s and the ' +
    'API\'s)', { timeout: 10_000 }, async (t) => {
    const cleanup = cleanupStack(t)
    const { url, schema } = scratchDatabaseUrl(cleanup)
    const plants = await createPostgresStore({ url })
    cleanup.after(() => plants.close())
    const store = await createPostgresWebhookStore({ url, statementTimeoutMs: 300 })
    cleanup.after(() => store.close())
    const locker = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await locker.connect()
    cleanup.after(async () => { await locker.end() })
    await locker.query('BEGIN')
    await locker.query(`LOCK TABLE ${schema}.webhook_events, ${schema}.webhook_deliveries, ` +
      `${schema}.webhook_subscriptions IN ACCESS EXCLUSIVE MODE`)
    // Unbounded, both would wait for the lock until the test times out. A lone statement (the claim, the
    // listing) is sent as it is, schema-qualified: the pool's silence bound ends it; a transaction's
    // statements also have the server's lock_timeout.
    const bounded = (err: unknown): boolean => ['55P03', '57014'].includes(String((err as { code?: unknown }).code)) ||
      (err instanceof Error && err.message === 'Query read timeout')
    await assert.rejects(
      store.claimDue(
        { lease: 'a:1', now: Date.now(), leaseMs: 60_000, limit: 1, perSubscription: 1, skipSubscriptions: [] }),
      bounded)
    await assert.rejects(store.listSubscriptions(record.owner, { limit: 1 }), bounded)
    await locker.query('ROLLBACK')
    assert.deepEqual(await store.listSubscriptions(record.owner, { limit: 1 }), { subscriptions: [], hasMore: false })
  })
}

if (TEST_DATABASE_URL !== undefined) {
  test('PostgreSQL: a schema the plant store has not migrated yet is refused', async (t) => {
    const { url } = scratchDatabaseUrl(t)
    await assert.rejects(createPostgresWebhookStore({ url }), (err: unknown) =>
      err instanceof StoreOpenError && /\(version 0\) has no webhook tables yet/.test(err.message))
  })
}
