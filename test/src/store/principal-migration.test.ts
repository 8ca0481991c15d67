import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import Database from 'better-sqlite3'
import { sha256 } from '../../../src/lib/digest.js'
import { jwtPrincipalId } from '../../../src/auth/principal-id.js'
import { migrations as postgresMigrations } from '../../../src/store/postgres/migrations.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { APPLICATION_ID, migrations as sqliteMigrations } from '../../../src/store/sqlite/migrations.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import type { Store } from '../../../src/store/contract.js'
import { cleanupStack, tempDatabaseFile } from '../../helpers/cleanup.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'

/**
 * Databases written while a JWT principal id was `jwt:<sub>` at any length: a long sub's
 * subscription and idempotency key were stored under it (on PostgreSQL up to an index row's size).
 * Upgraded, they are found under the bounded id the service now computes, and short ones stay.
 */
const LONG_SUB = 'é'.repeat(1000)
const SHORT = 'jwt:short-subject'
/** Keys expire: this one was stored just now. */
const NOW = Date.now()
const OLD_ROWS = `
  INSERT INTO plants (id, name, created_at, updated_at) VALUES (7, 'Fern', 1000, 1000);
  INSERT INTO idempotency_keys (scope, key, fingerprint, plant_id, name, created_at, updated_at)
  VALUES ('jwt:${LONG_SUB}', 'key-1', 'fingerprint-1', 7, 'Fern', ${NOW}, ${NOW});
  INSERT INTO webhook_subscriptions (owner, url, events, disabled, secret, created_at, updated_at)
  VALUES ('jwt:${LONG_SUB}', 'https://hooks.example.com/long', EVENTS, false, 'whsec_c2VjcmV0', 1000, 1000),
         ('${SHORT}', 'https://hooks.example.com/short', EVENTS, false, 'whsec_c2VjcmV0', 1000, 1000)`

async function assertUpgraded (store: Store, owners: () => Promise<string[]>): Promise<void> {
  const id = jwtPrincipalId(LONG_SUB)
  assert.equal(id, `jwt-sha256:${sha256(LONG_SUB, 'hex')}`)
  assert.deepEqual(await owners(), [id, SHORT])
  assert.equal((await store.webhooks.getSubscription(id, 1n))?.url, 'https://hooks.example.com/long',
    'the subscription keeps its owner')
  assert.equal((await store.webhooks.getSubscription(SHORT, 2n))?.url, 'https://hooks.example.com/short')
  const replay = await store.plants.create({ name: 'Fern' }, { scope: id, key: 'key-1', fingerprint: 'fingerprint-1' })
  assert.deepEqual([replay.replayed, replay.item.id, replay.item.name], [true, 7n, 'Fern'], 'the key still replays')
  assert.equal((await store.plants.list({ limit: 10 })).items.length, 1)
}

describe('upgrading long JWT principal ids to their bounded form', () => {
  test('SQLite (schema version 10)', async (t) => {
    const cleanup = cleanupStack(t)
    const file = tempDatabaseFile(cleanup, 'plant-store-principals-')
    const db = new Database(file)
    for (let step = 0; step < 10; step++) {
      const migration = sqliteMigrations[step]?.up
      if (typeof migration === 'function') migration(db)
      else db.exec(migration ?? '')
    }
    db.pragma(`application_id = ${APPLICATION_ID}`)
    db.pragma('user_version = 10')
    db.exec(OLD_ROWS.replaceAll('EVENTS', '\'plant.created\'').replaceAll('false', '0'))
    db.close()
    const store = createSqliteStore({ filename: file })
    cleanup.after(() => store.close())
    const reader = new Database(file, { readonly: true })
    cleanup.after(() => { reader.close() })
    await assertUpgraded(store, async () =>
      reader.prepare<[], string>('SELECT owner FROM webhook_subscriptions ORDER BY id').pluck().all())
  })

  if (TEST_DATABASE_URL === undefined) return
  test('PostgreSQL (schema version 9)', async (t) => {
    const cleanup = cleanupStack(t)
    const { url, schema } = scratchDatabaseUrl(cleanup)
    const released = postgresMigrations.slice(0, 9).map((step) => step.up)
    await adminQuery(`CREATE SCHEMA ${schema}; SET search_path TO ${schema};
      ${released.join(';\n')};
      CREATE TABLE plant_store_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
      INSERT INTO plant_store_migrations (version) SELECT generate_series(1, ${released.length});
      ${OLD_ROWS.replaceAll('EVENTS', '\'{plant.created}\'')}`)
    const store = await createPostgresStore({ url })
    cleanup.after(async () => { await store.close() })
    await assertUpgraded(store, async () =>
      (await adminQuery<{ owner: string }>(`SELECT owner FROM ${schema}.webhook_subscriptions ORDER BY id`)).map(
        ({ owner }) => owner))
  })
})
