import assert from 'node:assert/strict'
import { fdatasync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { plantEtag } from '../../../src/resources/plants.js'
import { createGroupCommit } from '../../../src/store/sqlite/group-commit.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { ServiceError } from '../../../src/lib/errors.js'
import type { Store } from '../../../src/store/contract.js'
import type { Cleanup } from '../../helpers/cleanup.js'

/** A fresh store that records the size of every committed write transaction. */
function storeWithCommits (t: Cleanup, filename = ':memory:'): { store: Store, commits: number[] } {
  const commits: number[] = []
  const store = createSqliteStore({ filename, onCommit: (writes) => commits.push(writes) })
  t.after(() => store.close())
  return { store, commits }
}

/**
 * A store on a fresh file under `full`, recording each commit and each sync; every WAL flush is held until the test
 * releases it.
 */
function fullStoreWithEvents (t: Cleanup): { store: Store, events: string[], held: Array<() => void> } {
  const events: string[] = []
  // Each held flush runs the real fdatasync once released: the test decides when a flush is under
  // way and in which order flushes return, whatever the disk's speed.
  const held: Array<() => void> = []
  const store = createSqliteStore({
    filename: join(mkdtempSync(join(tmpdir(), 'plant-store-group-')), 'plants.db'),
    synchronous: 'full',
    onCommit: (writes) => events.push(`commit ${writes}`),
    onSync: () => events.push('sync'),
    fdatasync: (fd, callback) => { held.push(() => { fdatasync(fd, callback) }) }
  })
  t.after(async () => {
    // Closing waits for flushes under way: let any still held run.
    for (const release of held.splice(0)) release()
    await store.close()
  })
  return { store, events, held }
}

/** Lets the event loop run until `condition` holds (at most ~2 s of turns). */
async function until (condition: () => boolean): Promise<void> {
  for (let turn = 0; turn < 2000 && !condition(); turn++) await new Promise((resolve) => setTimeout(resolve, 1))
  assert.ok(condition())
}

test('writes queued in the same turn commit in one transaction, results in request order', async (t) => {
  const { store, commits } = storeWithCommits(t)
  const created = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((name) => store.plants.create({ name })))
  assert.deepEqual(created.map(({ item: plant }) => [plant.id, plant.name]),
    [[1n, 'a'], [2n, 'b'], [3n, 'c'], [4n, 'd'], [5n, 'e']])
  assert.deepEqual(commits, [5])

  // A later turn is a new transaction: creates, replaces, updates and deletes share it.
  const [replaced, updated, deleted] = await Promise.all([
    store.plants.replace(1n, { name: 'A' }),
    store.plants.update(2n, { tag: 'green' }),
    store.plants.delete(3n)
  ])
  assert.equal(replaced.name, 'A')
  assert.equal(updated.tag, 'green')
  assert.equal(deleted.name, 'c')
  assert.deepEqual(commits, [5, 3])
})

test('a conflicting create fails alone: its neighbours in the batch are committed', async (t) => {
  const { store, commits } = storeWithCommits(t)
  const results = await Promise.allSettled([
    store.plants.create({ id: 10n, name: 'first' }),
    store.plants.create({ id: 10n, name: 'duplicate' }),
    store.plants.create({ id: 11n, name: 'after' })
  ])
  assert.deepEqual(commits, [1 + 1 + 1])
  assert.equal(results[0]?.status, 'fulfilled')
  assert.equal(results[1]?.status, 'rejected')
  assert.ok(
    results[1]?.status === 'rejected' && results[1].reason instanceof ServiceError &&
      results[1].reason.code === 'conflict')
  assert.equal(results[2]?.status, 'fulfilled')
  assert.equal((await store.plants.get(10n))?.name, 'first')
  assert.equal((await store.plants.get(11n))?.name, 'after')
})

test('a failed precondition changes nothing and does not stop the other writes of its batch', async (t) => {
  const { store } = storeWithCommits(t)
  const { item: plant } = await store.plants.create({ name: 'kept', tag: 'x' })
  const { item: other } = await store.plants.create({ name: 'other' })
  const [stale, staleDelete, fresh, removed] = await Promise.allSettled([
    store.plants.update(plant.id, { name: 'changed' }, ['"not-the-etag"']),
    store.plants.delete(plant.id, ['"not-the-etag"']),
    store.plants.update(other.id, { name: 'renamed' }, [plantEtag(other)]),
    store.plants.delete(other.id)
  ])
  const refused = (outcome: PromiseSettledResult<unknown>): boolean =>
    outcome.status === 'rejected' && outcome.reason instanceof ServiceError &&
      outcome.reason.code === 'precondition-failed'
  assert.ok(refused(stale))
  assert.ok(refused(staleDelete))
  assert.ok(fresh.status === 'fulfilled' && fresh.value.name === 'renamed')
  assert.ok(removed.status === 'fulfilled' && removed.value.id === other.id)
  assert.deepEqual(await store.plants.get(plant.id), plant)
  assert.equal(await store.plants.get(other.id), undefined)
})

test('the same id deleted twice in one batch: deleted once, then not-found', async (t) => {
  const { store, commits } = storeWithCommits(t)
  const { item: plant } = await store.plants.create({ name: 'once' })
  const outcomes = await Promise.allSettled(
    [store.plants.delete(plant.id), store.plants.delete(plant.id), store.plants.delete(plant.id + 1n)])
  assert.deepEqual(outcomes.map(
    (outcome) => outcome.status === 'fulfilled' ? outcome.value.id : (outcome.reason as ServiceError).code),
  [plant.id, 'not-found', 'not-found'])
  assert.deepEqual(commits, [1, 3])
})

test('idempotency keys keep their meaning inside a batch', async (t) => {
  const { store, commits } = storeWithCommits(t)
  const key = { scope: 'client', key: 'k1', fingerprint: 'body-1' }
  const results = await Promise.allSettled([
    store.plants.create({ name: 'fern' }, key),
    store.plants.create({ name: 'fern' }, key),
    store.plants.create({ name: 'other body' }, { ...key, fingerprint: 'body-2' }),
    store.plants.create({ name: 'no key' })
  ])
  assert.deepEqual(commits, [4])
  const [first, replay, reuse, plain] = results
  assert.ok(first?.status === 'fulfilled' && !first.value.replayed)
  assert.ok(replay?.status === 'fulfilled' && replay.value.replayed)
  assert.deepEqual(replay.value.item, first.value.item)
  assert.ok(
    reuse?.status === 'rejected' && reuse.reason instanceof ServiceError &&
      reuse.reason.code === 'idempotency-key-reused')
  assert.ok(plain?.status === 'fulfilled' && plain.value.item.id === first.value.item.id + 1n)
  // Only the two creates that made a plant made one.
  assert.deepEqual((await store.plants.list({ limit: 10 })).items.map((plant) => plant.name), ['fern', 'no key'])
})

test('a write resolves only after its COMMIT: another connection already sees it', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'plant-store-group-')), 'plants.db')
  const { store, commits } = storeWithCommits(t, file)
  const reader = new Database(file, { readonly: true })
  t.after(async () => { reader.close() })
  const count = (): number => Number(reader.prepare('SELECT count(*) FROM plants').pluck().get())

  const pending = Promise.all([store.plants.create({ name: 'a' }), store.plants.create({ name: 'b' })])
  // Queued, not yet committed: neither this connection nor the store's own reads see them.
  assert.equal(count(), 0)
  assert.deepEqual(commits, [])
  assert.deepEqual((await store.plants.list({ limit: 10 })).items, [])
  await pending
  assert.deepEqual(commits, [2])
  assert.equal(count(), 2)
})

test('closing the store commits the writes still queued', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'plant-store-group-')), 'plants.db')
  const store = createSqliteStore({ filename: file })
  const pending = store.plants.create({ name: 'queued' })
  await store.close()
  assert.equal((await pending).item.name, 'queued')
  const reopened = createSqliteStore({ filename: file })
  assert.equal((await reopened.plants.get(1n))?.name, 'queued')
  await reopened.close()
})

test('under full, writes are answered after one fdatasync of the WAL; reads that saw ' +
  'them wait for it too', async (t) => {
  const { store, events, held } = fullStoreWithEvents(t)

  const writes = Promise.all([store.plants.create({ name: 'a' }), store.plants.create({ name: 'b' })])
    .then((created) => { events.push('writes answered'); return created })
  await until(() => held.length === 1)
  // Committed, its flush under way: neither the writes nor a read that sees them are answered.
  const read = store.plants.get(1n).then((plant) => { events.push('read answered'); return plant })
  await new Promise((resolve) => setTimeout(resolve, 20))
  assert.deepEqual(events, ['commit 2'])
  held.shift()?.()
  const [[first], plant] = await Promise.all([writes, read])
  assert.deepEqual(plant, first?.item)
  assert.deepEqual(events, ['commit 2', 'sync', 'writes answered', 'read answered'])

  // With nothing waiting for the disk, a read answers at once, without another sync.
  assert.equal((await store.plants.get(2n))?.name, 'b')
  assert.deepEqual(events.slice(4), [])
  assert.equal(held.length, 0)
})

test('under full, a write that does not await the sync is answered once committed; its neighbours and ' +
  'later reads still wait', { timeout: 10_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-group-'))
  const db = new Database(join(dir, 'plants.db'))
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE t (v INTEGER)')
  const held: Array<() => void> = []
  const writes = createGroupCommit(db, {
    walFile: join(dir, 'plants.db-wal'),
    fdatasync: (fd, callback) => { held.push(() => { fdatasync(fd, callback) }) }
  })
  t.after(async () => {
    for (const release of held.splice(0)) release()
    await writes.close()
    db.close()
  })
  const insert = db.prepare('INSERT INTO t VALUES (?)')
  const events: string[] = []
  const durable = writes.enqueue(() => insert.run(1).changes).then(
    (changes) => { events.push('durable answered'); return changes })
  const bookkeeping = writes.enqueue(() => insert.run(2).changes, { awaitSync: false }).then(
    (changes) => { events.push('bookkeeping answered'); return changes })
  assert.equal(await bookkeeping, 1)
  await until(() => held.length === 1)
  // Committed together; the flush is held: only the write that does not await it is answered.
  const read = Promise.resolve(writes.afterDurable('read')).then(
    (value) => { events.push('read answered'); return value })
  await new Promise((resolve) => setTimeout(resolve, 20))
  assert.deepEqual(events, ['bookkeeping answered'])
  held.shift()?.()
  assert.equal(await durable, 1)
  assert.equal(await read, 'read')
  assert.deepEqual(events, ['bookkeeping answered', 'durable answered', 'read answered'])
})

test('under full, a claim hands out a delivery only once its event is on disk; outcomes do not wait for the disk, ' +
  'the API\'s reads of them do', { timeout: 10_000 }, async (t) => {
  const { store, held } = fullStoreWithEvents(t)
  const releaseAll = (): void => { for (const release of held.splice(0)) release() }
  const settle = async <T>(promise: Promise<T>): Promise<T> => {
    await until(() => held.length > 0)
    releaseAll()
    return await promise
  }
  const owner = 'a'.repeat(64)
  const subscription = await settle(store.webhooks.createSubscription({
    owner,
    url: 'https://example.com/hooks',
    events: ['plant.created'],
    disabled: false,
    secret: `whsec_${Buffer.alloc(32).toString('base64')}`
  }, Date.now()))
  // The plant and its event are committed; their flush is held.
  let created = false
  const create = store.plants.create({ name: 'a' }).then((result) => { created = true; return result })
  await until(() => held.length > 0)
  const now = Date.now()
  let claimedYet = false
  const claiming = store.webhooks.claimDue({
    lease: 'l1',
    now,
    leaseMs: 60_000,
    limit: 10,
    perSubscription: 2,
    skipSubscriptions: []
  })
    .then((result) => { claimedYet = true; return result })
  await new Promise((resolve) => setTimeout(resolve, 20))
  assert.deepEqual([created, claimedYet], [false, false],
    'the event is committed, but nothing is sent before it is on disk')
  releaseAll()
  await create
  const [claimed] = await claiming
  assert.ok(claimed !== undefined)
  assert.equal(held.length, 0, 'no flush is left under way')
  const done = await store.webhooks.completeDelivery({
    id: claimed.id,
    lease: 'l1',
    attemptedAt: now,
    statusCode: 204,
    status: 'succeeded',
    disableSubscription: false,
    failingDisableBefore: 0
  })
  assert.deepEqual(done, { recorded: true, subscriptionDisabled: false })
  let answered = false
  const page = store.webhooks.listDeliveries(owner, subscription.id, { limit: 10 }).then(
    (result) => { answered = true; return result })
  await until(() => held.length > 0)
  await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(answered, false, 'the outcome was answered unflushed; the API does not show it before it is on disk')
  releaseAll()
  assert.equal((await page)?.deliveries[0]?.status, 'succeeded')
})

test('under normal, a write is answered after its COMMIT, without an fsync', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'plant-store-group-')), 'plants.db')
  let syncs = 0
  const store = createSqliteStore({ filename: file, synchronous: 'normal', onSync: () => { syncs++ } })
  t.after(() => store.close())
  await Promise.all([store.plants.create({ name: 'a' }), store.plants.delete(1n)])
  assert.equal(syncs, 0)
})

test('once a sync of the WAL fails, nothing more is acknowledged: writes, reads and ping reject', async (t) => {
  const db = new Database(':memory:')
  t.after(async () => { db.close() })
  db.exec('CREATE TABLE t (x INTEGER)')
  const insert = db.transaction((x: number) => db.prepare('INSERT INTO t VALUES (?)').run(x).changes)
  const writes = createGroupCommit(db, { walFile: join(tmpdir(), `missing-${process.pid}`, 'plants.db-wal') })

  await assert.rejects(writes.enqueue(() => insert(1)), { code: 'ENOENT' })
  await assert.rejects(writes.enqueue(() => insert(2)), { code: 'ENOENT' })
  await assert.rejects(Promise.resolve(writes.afterDurable('read')), { code: 'ENOENT' })
  // The first write had committed before its sync failed; the second never ran.
  assert.equal(Number(db.prepare('SELECT count(*) FROM t').pluck().get()), 1)
  await writes.close()
})

test('under full, a burst committed while a sync runs is made durable too; answers keep their order', async (t) => {
  const { store, events, held } = fullStoreWithEvents(t)

  const first = store.plants.create({ name: 'first' }).then(() => events.push('first answered'))
  await until(() => held.length === 1)
  const second = store.plants.create({ name: 'second' }).then(() => events.push('second answered'))
  // The second burst commits while the first flush runs, and starts a flush of its own.
  await until(() => held.length === 2)
  assert.deepEqual(events, ['commit 1', 'commit 1'])
  // The second flush returns first: it covers the first burst too, which is still answered first.
  held.splice(1, 1)[0]?.()
  await Promise.all([first, second])
  assert.deepEqual(events, ['commit 1', 'commit 1', 'sync', 'first answered', 'second answered'])
  held.shift()?.()
  await until(() => events.length === 6)
  assert.equal(events[5], 'sync')
})
