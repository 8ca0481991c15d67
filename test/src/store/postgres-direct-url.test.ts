import assert from 'node:assert/strict'
import { test } from 'node:test'
import { StoreOpenError } from '../../../src/lib/errors.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { postgresName } from '../../../src/store/postgres/connection.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { startPgbouncer } from '../../helpers/pgbouncer.js'
import {
  adminQuery, directUrl, scratchDatabase, scratchDatabaseUrl, TEST_DATABASE_URL,
  withSchema
} from '../../helpers/postgres.js'
import { expectStartFailure, fatalMessage } from '../../helpers/server-process.js'

// DATABASE_DIRECT_URL carries migrations and LISTEN: one naming another database would migrate it
// and listen there, while requests go to DATABASE_URL's. The start compares what each server says.

if (TEST_DATABASE_URL !== undefined) {
  const refusal = (url: string, direct: string, what: string): string =>
    `DATABASE_DIRECT_URL (${postgresName(direct)}) ${what} than DATABASE_URL (${postgresName(url)}): both must ` +
      'reach the same database'

  test('a DATABASE_DIRECT_URL of another database stops the store naming both, before anything is ' +
    'migrated', async (t) => {
    const cleanup = cleanupStack(t)
    const { url, schema } = scratchDatabaseUrl(cleanup)
    const other = await scratchDatabase(cleanup)
    const direct = withSchema(other.url, schema)
    await assert.rejects(createPostgresStore({ url, directUrl: direct }), (err: unknown) => {
      assert.ok(err instanceof StoreOpenError)
      assert.equal(err.message,
        refusal(url, direct, `reaches another database (${other.name}, not ${new URL(url).pathname.slice(1)})`))
      return true
    })
    assert.deepEqual(await adminQuery('SELECT nspname FROM pg_namespace WHERE nspname = $1', [schema]), [],
      'nothing made in DATABASE_URL either')
    // A schema of its own named by the direct URL must be DATABASE_URL's.
    const elsewhere = withSchema(directUrl(url), `${schema}_x`)
    await assert.rejects(createPostgresStore({ url, directUrl: elsewhere }),
      { message: refusal(url, elsewhere, 'names another schema') })
  })

  test('the real server refuses to start with DATABASE_DIRECT_URL on another database: one fatal ' +
    'line naming both, exit 1', async (t) => {
    const cleanup = cleanupStack(t)
    const { url } = scratchDatabaseUrl(cleanup)
    const other = await scratchDatabase(cleanup)
    const {
      code, stdout,
      stderr
    } = await expectStartFailure({ env: { DATABASE_URL: url, DATABASE_DIRECT_URL: other.url } })
    assert.equal(code, 1)
    assert.equal(stdout, '')
    const what = `reaches another database (${other.name}, not ${new URL(url).pathname.slice(1)})`
    assert.equal(fatalMessage(stderr),
      `cannot use the PostgreSQL database: ${refusal(url, other.url, what)}; nothing was changed`)
    assert.deepEqual(await adminQuery('SELECT 1 FROM pg_database WHERE datname = $1', [other.name]),
      [{ '?column?': 1 }])
  })

  test('behind a pooler (another host and port), a DATABASE_DIRECT_URL of the same database opens ' +
    'the store', { timeout: 60_000 }, async (t) => {
    const cleanup = cleanupStack(t)
    const { url } = scratchDatabaseUrl(cleanup)
    const pooler = await startPgbouncer({ backend: directUrl(url), poolMode: 'transaction' }, cleanup)
    const store = await createPostgresStore({ url: pooler.url(url), directUrl: directUrl(url) })
    cleanup.after(async () => { await store.close() })
    assert.equal((await store.plants.create({ name: 'Fern' })).item.name, 'Fern')
  })
}
