import assert from 'node:assert/strict'
import { existsSync, statSync } from 'node:fs'
import { describe, test } from 'node:test'
import Database from 'better-sqlite3'
import { isServiceError } from '../../../src/lib/errors.js'
import { RESOURCES } from '../../../src/resources/index.js'
import { compatibleFrom, type MigrationStep } from '../../../src/store/migration.js'
import { parsePostgresUrl } from '../../../src/store/postgres/connection.js'
import { migrateWhenReachable } from '../../../src/store/postgres/migrate.js'
import { migrations as postgresMigrations } from '../../../src/store/postgres/migrations.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { applyMigration, APPLICATION_ID, migrations as sqliteMigrations } from '../../../src/store/sqlite/migrations.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { cleanupStack, tempDatabaseFile } from '../../helpers/cleanup.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'

const KNOWN = postgresMigrations.length

test('compatibleFrom: the last contract step up to a version; expand steps keep what came before', () => {
  const steps: Array<MigrationStep<string>> = [
    { name: 'a', up: '' }, { name: 'b', expand: true, up: '' },
    { name: 'c', up: '' }, { name: 'd', expand: true, up: '' }
  ]
  assert.deepEqual([0, 1, 2, 3, 4].map((version) => compatibleFrom(steps, version)), [0, 1, 1, 3, 3])
})

describe('SQLite: a migration keeps a copy of the file it changes', () => {
  /** A database at schema version `version` of the real steps, holding one plant. */
  function databaseAt (file: string, version: number): void {
    const db = new Database(file)
    for (let step = 0; step < version; step++) applyMigration(db, step)
    db.pragma(`application_id = ${APPLICATION_ID}`)
    db.pragma(`user_version = ${version}`)
    db.prepare("INSERT INTO plants (name, tag, created_at, updated_at) VALUES ('Fern', 'green', 1, 2)").run()
    db.close()
  }

  test('the copy is the database as it was before the first step, named in the report; nothing to copy after',
    async (t) => {
      const cleanup = cleanupStack(t)
      const file = tempDatabaseFile(cleanup, 'plant-store-upgrade-')
      databaseAt(file, sqliteMigrations.length - 1)
      const store = createSqliteStore({ filename: file, checkpoint: false })
      await store.close()
      const backup = `${file}.schema-${sqliteMigrations.length - 1}.bak`
      assert.deepEqual(store.migration, {
        from: sqliteMigrations.length - 1,
        version: sqliteMigrations.length,
        known: sqliteMigrations.length,
        applied: [{ version: sqliteMigrations.length, name: sqliteMigrations.at(-1)?.name }],
        backup
      })
      assert.equal(statSync(backup).mode & 0o777, 0o600)
      const copy = new Database(backup, { readonly: true })
      assert.equal(copy.pragma('user_version', { simple: true }), sqliteMigrations.length - 1)
      assert.deepEqual(copy.prepare('SELECT name, tag FROM plants').all(), [{ name: 'Fern', tag: 'green' }])
      copy.close()

      const again = createSqliteStore({ filename: file, checkpoint: false })
      await again.close()
      const known = sqliteMigrations.length
      assert.deepEqual(again.migration, { from: known, version: known, known, applied: [] })
    })

  test('a second upgrade from the same version keeps the first copy and writes another beside it', async (t) => {
    const cleanup = cleanupStack(t)
    const file = tempDatabaseFile(cleanup, 'plant-store-upgrade-')
    const version = sqliteMigrations.length - 1
    databaseAt(file, version)
    await createSqliteStore({ filename: file, checkpoint: false }).close()
    const first = `${file}.schema-${version}.bak`
    // Put back the copy, as going back to the release before does, and upgrade again.
    const restored = new Database(first, { readonly: true })
    await restored.backup(file)
    restored.close()
    const store = createSqliteStore({ filename: file, checkpoint: false })
    await store.close()
    assert.equal(store.migration.backup, `${file}.schema-${version}.1.bak`)
    assert.ok(existsSync(first))
  })

  test("MIGRATE_ON_START=0 ('check'): a file behind, or none yet, is refused naming plant-store migrate", async (t) => {
    const cleanup = cleanupStack(t)
    const file = tempDatabaseFile(cleanup, 'plant-store-upgrade-')
    assert.throws(() => createSqliteStore({ filename: file, migrate: 'check' }), {
      message: `the database schema (version 0) is behind this plant-store (${sqliteMigrations.length}) and ` +
        'MIGRATE_ON_START=0: run `plant-store migrate` first (docs/upgrading.md)'
    })
    assert.equal(existsSync(file), false)
    databaseAt(file, sqliteMigrations.length - 1)
    assert.throws(() => createSqliteStore({ filename: file, migrate: 'check' }),
      { message: /is behind this plant-store/ })
    await createSqliteStore({ filename: file }).close()
    const store = createSqliteStore({ filename: file, migrate: 'check', checkpoint: false })
    assert.deepEqual((await store.plants.list({ limit: 5 })).items.map((plant) => plant.name), ['Fern'])
    await store.close()
  })
})

describe('PostgreSQL: a schema a newer release migrated', { skip: TEST_DATABASE_URL === undefined }, () => {
  /** The schema as a newer release with `extra` steps leaves it. */
  async function migrateAsNewer (url: string, extra: Array<MigrationStep<string>>): Promise<void> {
    const target = parsePostgresUrl(url)
    await migrateWhenReachable({ connectionString: target.connectionString }, target, RESOURCES,
      { apply: true, steps: [...postgresMigrations, ...extra] })
  }

  test('expand steps: this release starts on it and is ready; a contract step: it is refused, naming both versions',
    async (t) => {
      const cleanup = cleanupStack(t)
      const { url, schema } = scratchDatabaseUrl(cleanup)
      await createPostgresStore({ url }).then(async (store) => { await store.close() })
      const table = { name: 'a table of a newer release', expand: true, up: 'CREATE TABLE pots (id bigint)' } as const
      await migrateAsNewer(url, [table])
      const rows = await adminQuery(`SELECT version, name, compatible_from FROM ${schema}.plant_store_migrations
        WHERE version > ${KNOWN - 1} ORDER BY version`)
      assert.deepEqual(rows, [
        { version: KNOWN, name: postgresMigrations.at(-1)?.name, compatible_from: KNOWN },
        { version: KNOWN + 1, name: 'a table of a newer release', compatible_from: KNOWN }
      ])

      const store = await createPostgresStore({ url })
      cleanup.after(async () => { await store.close() })
      assert.deepEqual(store.migration, { from: KNOWN + 1, version: KNOWN + 1, known: KNOWN, applied: [] })
      await store.ping()
      const { item: plant } = await store.plants.create({ name: 'Fern' })
      assert.equal((await store.plants.get(plant.id))?.name, 'Fern')

      await migrateAsNewer(url, [
        table,
        { name: 'a contract step', up: 'ALTER TABLE pots RENAME TO vases' }
      ])
      // The running instance stops saying it is ready (its balancer moves its traffic elsewhere).
      await assert.rejects(store.ping(), (err: unknown) => isServiceError(err, 'unavailable'))
      await assert.rejects(createPostgresStore({ url }), {
        message: `the database schema (version ${KNOWN + 2}) is newer than this plant-store (${KNOWN}) and not ` +
          `compatible with it (it needs code of schema version ${KNOWN + 2} or newer): ` +
          'deploy that release, or a newer one'
      })
    })

  test('a table it needs renamed under it: 503 (unavailable), never a 500, and ready again once it is back',
    async (t) => {
      const cleanup = cleanupStack(t)
      const { url, schema } = scratchDatabaseUrl(cleanup)
      const store = await createPostgresStore({ url })
      cleanup.after(async () => { await store.close() })
      const { item: plant } = await store.plants.create({ name: 'Fern' })
      await adminQuery(`ALTER TABLE ${schema}.plants RENAME TO plants_renamed`)
      await assert.rejects(store.plants.get(plant.id), (err: unknown) => isServiceError(err, 'unavailable'))
      await assert.rejects(store.plants.create({ name: 'Moss' }), (err: unknown) => isServiceError(err, 'unavailable'))
      await assert.rejects(store.ping(), (err: unknown) => isServiceError(err, 'unavailable'))
      await adminQuery(`ALTER TABLE ${schema}.plants_renamed RENAME COLUMN tag TO label`)
      await adminQuery(`ALTER TABLE ${schema}.plants_renamed RENAME TO plants`)
      await assert.rejects(store.plants.get(plant.id), (err: unknown) => isServiceError(err, 'unavailable'))
      await adminQuery(`ALTER TABLE ${schema}.plants RENAME COLUMN label TO tag`)
      await store.ping()
      assert.equal((await store.plants.get(plant.id))?.name, 'Fern')
    })

  test("MIGRATE_ON_START=0 ('check'): a schema behind is refused and left untouched; a current one is served",
    async (t) => {
      const cleanup = cleanupStack(t)
      const { url, schema } = scratchDatabaseUrl(cleanup)
      await assert.rejects(createPostgresStore({ url, migrate: 'check' }), {
        message: `the database schema (version 0) is behind this plant-store (${KNOWN}) and MIGRATE_ON_START=0: ` +
          'run `plant-store migrate` first (docs/upgrading.md)'
      })
      assert.deepEqual(await adminQuery('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]), [])
      await createPostgresStore({ url }).then(async (store) => { await store.close() })
      const store = await createPostgresStore({ url, migrate: 'check' })
      cleanup.after(async () => { await store.close() })
      assert.deepEqual(store.migration, { from: KNOWN, version: KNOWN, known: KNOWN, applied: [] })
      await store.ping()
    })
})
