import assert from 'node:assert/strict'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { ServiceError } from '../../../src/lib/errors.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import type { Store } from '../../../src/store/contract.js'
import { sqliteFromDump } from '../../helpers/sqlite-dump.js'

/**
 * test/fixtures/release-schema-11.sql is the dump of a database written by the release before idempotency
 * keys and chosen ids were resource-neutral (schema version 11), through its own store: three keyed
 * creates (one of a plant since changed, one of a plant since deleted), chosen ids 40, 41 (deleted) and
 * 2^53 - 1, and the nine events of those writes waiting in the outbox.
 */
const WRITTEN_AT = 1795811662711

const releaseFile = (): string => sqliteFromDump('release-schema-11.sql', 'plant-store-keys-')

const outbox = (file: string): unknown[] => {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare('SELECT id, message_id, event_type, subject_type, subject_id, payload, created_at ' +
      'FROM webhook_events ORDER BY id').all()
  } finally {
    db.close()
  }
}

async function generatedIds (store: Store, count: number): Promise<bigint[]> {
  const ids: bigint[] = []
  for (let i = 0; i < count; i++) ids.push((await store.plants.create({ name: `generated ${i}` })).item.id)
  return ids
}

test('SQLite: a file of the release before resource-neutral keys keeps every key, chosen id and event', async (t) => {
  // A minute after the release wrote them: its keys have not expired yet.
  t.mock.timers.enable({ apis: ['Date'], now: WRITTEN_AT + 60_000 })
  const file = releaseFile()
  const events = outbox(file)
  assert.equal(events.length, 9)
  const store = createSqliteStore({ filename: file })
  t.after(() => store.close())

  const retry = async (scope: string, key: string, fingerprint: string): Promise<unknown> =>
    await store.plants.create({ name: 'ignored' }, { scope, key, fingerprint })
  const at = (ms: number): string => new Date(ms).toISOString()
  assert.deepEqual(await retry('client-a', 'key-1', 'fp-1'), {
    replayed: true,
    item: { id: 1n, name: 'Monstera', tag: 'tropical', createdAt: at(WRITTEN_AT), updatedAt: at(WRITTEN_AT) }
  })
  assert.deepEqual(await retry('client-b', 'key-1', 'fp-2'), {
    replayed: true,
    item: { id: 2n, name: 'Fern', createdAt: at(WRITTEN_AT + 21), updatedAt: at(WRITTEN_AT + 21) }
  })
  assert.deepEqual(await retry('client-a', 'key-2', 'fp-3'), { replayed: true, item: await store.plants.get(40n) })
  await assert.rejects(retry('client-a', 'key-1', 'other'),
    (err) => err instanceof ServiceError && err.code === 'idempotency-key-reused')

  // The sequence was at 2: it skips the chosen 40 and the chosen, deleted 41.
  const ids = await generatedIds(store, 38)
  assert.deepEqual(ids, [...Array.from({ length: 37 }, (_, i) => BigInt(i + 3)), 42n])

  // The outbox is as the release left it, plus the creates above.
  assert.deepEqual(outbox(file).slice(0, 9), events)
  assert.equal(outbox(file).length, 9 + 38)
})
