import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { ServiceError } from '../../../src/lib/errors.js'
import { migrations } from '../../../src/store/sqlite/migrations.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { createSqliteWebhookStore, openSqliteWebhookDatabase } from '../../../src/store/sqlite/webhook-store.js'

function tempFile (): string {
  return join(mkdtempSync(join(tmpdir(), 'plant-store-sqlite-')), 'nested', 'plants.db')
}

test('no SQLite statement binds a bare LIMIT parameter (SQLite prepares such a statement again at every ' +
  'run: see boundLimit)', () => {
  const folder = new URL('../../../src/store/sqlite/', import.meta.url)
  const files = readdirSync(folder).filter((name) => name.endsWith('.js'))
  assert.ok(files.includes('sqlite-store.js') && files.includes('webhook-store.js'))
  const bare = files.flatMap(
    (name) => [...readFileSync(new URL(name, folder), 'utf8').matchAll(/LIMIT\s+(\?|[@:$]\w+)/gi)].map(
      ([match]) => `${name}: ${match}`))
  assert.deepEqual(bare, [])
})

test('a new file is created (with its folder), in WAL mode, at the latest schema version', async () => {
  const file = tempFile()
  const store = createSqliteStore({ filename: file })
  await store.close()
  const db = new Database(file, { readonly: true })
  assert.equal(db.pragma('journal_mode', { simple: true }), 'wal')
  assert.equal(db.pragma('user_version', { simple: true }), migrations.length)
  db.close()
})

test('plants survive closing and reopening the file, ids as exact bigints', async () => {
  const file = tempFile()
  const first = createSqliteStore({ filename: file })
  await first.plants.create({ id: 9223372036854775807n, name: 'max' })
  const { item: plant } = await first.plants.create({ id: 9007199254740993n, name: 'beyond 2^53', tag: 'big' })
  await first.close()

  const second = createSqliteStore({ filename: file })
  assert.deepEqual(await second.plants.get(9007199254740993n), plant)
  assert.equal((await second.plants.get(9223372036854775807n))?.id, 9223372036854775807n)
  await second.close()
})

test('deleted ids are never handed out again', async () => {
  const store = createSqliteStore({ filename: ':memory:' })
  const { item: first } = await store.plants.create({ name: 'a' })
  const { item: second } = await store.plants.create({ name: 'b' })
  assert.deepEqual(await store.plants.delete(second.id), second)
  const { item: third } = await store.plants.create({ name: 'c' })
  assert.equal(third.id, second.id + 1n)
  assert.equal(first.id, 1n)
  await store.close()
})

test('a delete of the same id answers the plant once, then not-found', async () => {
  const store = createSqliteStore({ filename: ':memory:' })
  const { item: plant } = await store.plants.create({ name: 'a' })
  const [first, second] = await Promise.allSettled([store.plants.delete(plant.id), store.plants.delete(plant.id)])
  assert.deepEqual(first, { status: 'fulfilled', value: plant })
  assert.ok(
    second?.status === 'rejected' && second.reason instanceof ServiceError && second.reason.code === 'not-found')
  await store.close()
})

test('a subscription another connection to the file enabled is seen by the next write: ' +
  'its event is written', async (t) => {
  const file = tempFile()
  const store = createSqliteStore({ filename: file, synchronous: 'normal' })
  t.after(() => store.close())
  // A write first: the store now knows that no subscription is enabled.
  await store.plants.create({ name: 'before' })
  const other = createSqliteWebhookStore({ db: openSqliteWebhookDatabase(file), ownsDb: true })
  t.after(() => other.close())
  const { id } = await other.createSubscription({
    owner: 'o',
    url: 'https://receiver.example/hooks',
    events: ['plant.created'],
    disabled: false,
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
  }, Date.now())
  await store.plants.create({ name: 'after' })
  const page = await store.webhooks.listDeliveries('o', id, { limit: 10 })
  assert.equal(page?.deliveries.length, 1)
})
