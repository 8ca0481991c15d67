import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import Database from 'better-sqlite3'
import { migrations as postgresMigrations } from '../../../src/store/postgres/migrations.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { APPLICATION_ID, migrations as sqliteMigrations } from '../../../src/store/sqlite/migrations.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { MAX_ASSIGNED_ID, type Store } from '../../../src/store/contract.js'
import type { Cleanup } from '../../helpers/cleanup.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'

/**
 * Databases written before the server's ids had a range of their own (schema version 2): until
 * then a chosen id pushed the sequence past it, so once a client chose 2^53 - 1 every generated id
 * was above 2^53. Upgraded, the sequence goes on where it was when that was within range, else after
 * the largest known id below the run of ids that reaches 2^53 - 1.
 */
const MAX = MAX_ASSIGNED_ID

async function generatedIds (store: Store, count: number): Promise<bigint[]> {
  const ids: bigint[] = []
  for (let i = 0; i < count; i++) ids.push((await store.plants.create({ name: `generated ${i}` })).item.id)
  return ids
}

/** A SQLite database at schema version 2 with `write` run on it, as the old code left it. */
function sqliteVersion2 (write: (db: Database.Database) => void): string {
  const file = join(mkdtempSync(join(tmpdir(), 'plant-store-ids-')), 'plants.db')
  const db = new Database(file)
  db.exec(`${String(sqliteMigrations[0]?.up)}; ${String(sqliteMigrations[1]?.up)}`)
  db.pragma(`application_id = ${APPLICATION_ID}`)
  db.pragma('user_version = 2')
  write(db)
  db.close()
  return file
}

describe('upgrading the id sequence (schema version 2 to the latest)', () => {
  test('SQLite: a sequence within range goes on where it was, past deleted ids', async (t) => {
    const file = sqliteVersion2((db) => {
      db.exec("INSERT INTO plants (name, created_at, updated_at) VALUES ('a', 0, 0), ('b', 0, 0), ('c', 0, 0); " +
        'DELETE FROM plants WHERE id = 3')
    })
    const store = createSqliteStore({ filename: file })
    t.after(() => store.close())
    assert.deepEqual(await generatedIds(store, 2), [4n, 5n])
  })

  test('SQLite: a sequence pushed past 2^53 - 1 comes back below the ids chosen at the top', async (t) => {
    const file = sqliteVersion2((db) => {
      const insert = db.prepare('INSERT INTO plants (id, name, created_at, updated_at) VALUES (?, ?, 0, 0)')
      insert.run(null, 'generated 1')
      insert.run(null, 'generated 2')
      insert.run(100n, 'chosen')
      insert.run(MAX - 1n, 'chosen at the top')
      insert.run(MAX, 'chosen at the very top')
      // The old AUTOINCREMENT went on above them: 2^53, 2^53 + 1.
      insert.run(null, 'generated beyond')
      insert.run(null, 'generated beyond')
    })
    const store = createSqliteStore({ filename: file })
    t.after(() => store.close())
    assert.deepEqual(await generatedIds(store, 2), [101n, 102n])
    assert.equal((await store.plants.get(MAX + 2n))?.name, 'generated beyond',
      'rows beyond the range are kept as they are')
  })
})

if (TEST_DATABASE_URL !== undefined) {
  /** A PostgreSQL schema at version 2 with `write` run in it, as the old code left it. */
  async function postgresVersion2 (t: Cleanup, write: string): Promise<string> {
    const { url, schema } = scratchDatabaseUrl(t)
    await adminQuery(`CREATE SCHEMA ${schema}; SELECT set_config('search_path', '${schema}', true);
      ${postgresMigrations[0]?.up ?? ''}; ${postgresMigrations[1]?.up ?? ''};
      CREATE TABLE plant_store_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
      INSERT INTO plant_store_migrations (version) VALUES (1), (2);
      ${write}`)
    return url
  }

  describe('upgrading the PostgreSQL id sequence (schema version 2 to the latest)', () => {
    test('a sequence within range goes on where it was, past deleted ids', async (t) => {
      const url = await postgresVersion2(t, `INSERT INTO plants (name, created_at, updated_at)
        VALUES ('a', 0, 0), ('b', 0, 0), ('c', 0, 0);
        DELETE FROM plants WHERE id = 3`)
      const store = await createPostgresStore({ url })
      t.after(() => store.close())
      assert.deepEqual(await generatedIds(store, 2), [4n, 5n])
    })

    test('a fresh schema: the first id is 1', async (t) => {
      const store = await createPostgresStore({ url: await postgresVersion2(t, 'SELECT 1') })
      t.after(() => store.close())
      assert.deepEqual(await generatedIds(store, 2), [1n, 2n])
    })

    test('a sequence pushed past 2^53 - 1 comes back below the ids chosen at the top', async (t) => {
      // The old code raised the sequence to every chosen id, then went on above 2^53 - 1.
      const url = await postgresVersion2(t, `INSERT INTO plants (name, created_at, updated_at)
        VALUES ('generated 1', 0, 0), ('generated 2', 0, 0);
        INSERT INTO plants (id, name, created_at, updated_at)
        VALUES (100, 'chosen', 0, 0), (${MAX - 1n}, 'chosen at the top', 0, 0),
          (${MAX}, 'chosen at the very top', 0, 0);
        SELECT setval('plants_id_seq', ${MAX});
        INSERT INTO plants (name, created_at, updated_at)
        VALUES ('generated beyond', 0, 0), ('generated beyond', 0, 0)`)
      const store = await createPostgresStore({ url })
      t.after(() => store.close())
      assert.deepEqual(await generatedIds(store, 2), [101n, 102n])
      assert.equal((await store.plants.get(MAX + 2n))?.name, 'generated beyond',
        'rows beyond the range are kept as they are')
    })
  })
}
