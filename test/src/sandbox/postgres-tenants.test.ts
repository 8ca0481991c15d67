import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test, type TestContext } from 'node:test'
import { createPostgresTenants, tenantSchema } from '../../../src/sandbox/postgres-tenants.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'

/** New tenants asked for at once: more than any bound below, so a burst has to wait its turn. */
const BURST = 12

/**
 * Opens BURST new tenants at once on a backend sharing `poolMax` connections, and returns the most creations of
 * their schemas PostgreSQL was seen running at one time (the sessions whose active statement makes one of them).
 */
async function mostCreationsAtOnce (t: TestContext, poolMax: number): Promise<number> {
  const { url, schema } = scratchDatabaseUrl(t)
  const backend = await createPostgresTenants({ url, poolMax })
  t.after(async () => { await backend.close() })
  const keys = Array.from({ length: BURST }, () => randomBytes(32).toString('hex'))
  const schemas = keys.map((key) => tenantSchema(schema, key))
  // Their own hook: the scratch schema's (the registry's) may run first.
  t.after(async () => {
    for (const name of schemas) await adminQuery(`DROP SCHEMA IF EXISTS ${name} CASCADE`)
  })

  let most = 0
  const stop = new AbortController()
  const watching = (async () => {
    while (!stop.signal.aborted) {
      const rows = await adminQuery<{ query: string }>(
        'SELECT query FROM pg_stat_activity WHERE state = \'active\' AND query LIKE \'%CREATE SCHEMA sbx_%\'')
      const creating = rows.filter(({ query }) => schemas.some((name) => query.includes(`CREATE SCHEMA ${name}`)))
      most = Math.max(most, creating.length)
    }
  })()
  try {
    const opened = await Promise.all(keys.map(async (key) => await backend.open(key, true)))
    assert.deepEqual(opened.map(({ created }) => created), keys.map(() => true))
    for (const { store } of opened) await store.close()
  } finally {
    stop.abort()
    await watching
  }
  return most
}

if (TEST_DATABASE_URL !== undefined) {
  test('new tenants\' schemas are made at most four at a time, never on more than half the shared connections: ' +
    'one at a time on two, at most two on four, at most four on ten', async (t) => {
    assert.equal(await mostCreationsAtOnce(t, 2), 1)
    const onFour = await mostCreationsAtOnce(t, 4)
    assert.ok(onFour >= 1 && onFour <= 2, `${onFour} at once on four connections`)
    const onTen = await mostCreationsAtOnce(t, 10)
    assert.ok(onTen >= 1 && onTen <= 4, `${onTen} at once on ten connections`)
  })
}
