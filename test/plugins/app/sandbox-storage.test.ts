import assert from 'node:assert/strict'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import pg from 'pg'
import { tenantSchema } from '../../../src/sandbox/postgres-tenants.js'
import { TENANT_WAL_BYTES, tenantDirectory } from '../../../src/sandbox/sqlite-tenants.js'
import { TENANT_STORAGE_LIMITS } from '../../../src/sandbox/storage.js'
import { tokenDigest } from '../../../src/auth/tokens.js'
import { loopbackOnlyRequest } from '../../helpers/loopback-only.js'
import { directUrl, scratchDatabase } from '../../helpers/postgres.js'
import { AUTH_A, buildSandboxApp, sandboxDatabases, TOKEN_A } from '../../helpers/sandbox.js'
import { until } from '../../helpers/webhook-receiver.js'

/** Enough cycles to leave three times each limit behind without one. */
const CYCLES = 600
const TABLES = ['idempotency_keys', 'chosen_ids', 'webhook_deliveries', 'webhook_events'] as const
const KIB = 1024

/** The bounds docs/operations.md states for a tenant of at most 100 plants. */
const SQLITE_FILE_BYTES = 512 * KIB
const POSTGRES_RELATION_BYTES = 640 * KIB

for (const database of sandboxDatabases) {
  test(`storage on ${database.name}: keyed creates and deletes by the thousand leave a ` +
    'tenant within its bound', async (t) => {
    // PostgreSQL's case on a database of its own: VACUUM FULL keeps the dead rows that a snapshot of
    // another session of the same database may still see (other test files' sessions, on the shared one).
    const own = database.name === 'PostgreSQL' ? await scratchDatabase(t) : undefined
    const app = await buildSandboxApp(t, own === undefined ? database : { ...database, url: () => own.url },
      { RATE_LIMIT_MAX: '0' }, { webhookRequest: loopbackOnlyRequest })
    const url = app.config.databaseUrl
    const file = join(tenantDirectory(url), `${tokenDigest(TOKEN_A)}.db`)
    // Every create is an event and a delivery (attempts fail without a connection, and are paced).
    const subscribed = await app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: AUTH_A,
      payload: { url: 'https://93.184.216.34/hooks' }
    })
    assert.equal(subscribed.statusCode, 201, subscribed.body)
    let walPeak = 0
    for (let i = 0; i < CYCLES; i++) {
      // Every other create chooses an id ahead of the sequence: one more id to remember.
      const payload = { name: `plant ${i}`, ...(i % 2 === 1 && { id: 1_000_000 + i }) }
      const created = await app.inject({
        method: 'POST',
        url: '/plants',
        headers: { ...AUTH_A, 'idempotency-key': `key-${i}` },
        payload
      })
      assert.equal(created.statusCode, 201, created.body)
      const deleted = await app.inject({
        method: 'DELETE',
        url: `/plants/${created.json<{ id: number }>().id}`,
        headers: AUTH_A
      })
      assert.equal(deleted.statusCode, 204)
      if (own === undefined) walPeak = Math.max(walPeak, statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0)
    }
    assert.equal((await app.inject({ url: '/plants?limit=100', headers: AUTH_A })).json<unknown[]>().length, 5,
      'the seed is still there')
    // Closing the tenant trims what the last writes added.
    await app.close()

    const counts: Record<string, number> = {}
    if (own !== undefined) {
      const client = new pg.Client({ connectionString: directUrl(own.url) })
      await client.connect()
      const rows = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> =>
        (await client.query<R>(text, values)).rows
      let bytes: number
      try {
        const schema = tenantSchema(new URL(url).searchParams.get('schema') ?? undefined, tokenDigest(TOKEN_A))
        for (const table of TABLES) {
          counts[table] = Number((await rows<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.${table}`))[0]?.n)
        }
        // Deleted rows keep their room until autovacuum makes it reusable (it does not give it back):
        // what is bounded is the live data, measured once the tables are rewritten without the dead rows.
        // VACUUM FULL's own snapshot keeps those deleted after the oldest transaction still running on the
        // whole server began (another test file's): first every transaction older than now ends.
        const [begun] = await rows<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')
        await until('every transaction older than the measurement has ended',
          async () => (await rows<{ done: boolean }>(
            'SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint > $1::bigint AS done',
            [begun?.xid]))[0]?.done === true,
          60_000)
        for (const { relname } of await rows<{ relname: string }>(
          'SELECT relname FROM pg_stat_user_tables WHERE schemaname = $1', [schema])) {
          await rows(`VACUUM FULL ${schema}.${relname}`)
        }
        const [size] = await rows<{ bytes: string }>(
          'SELECT sum(pg_total_relation_size(c.oid)) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = ' +
            'c.relnamespace WHERE n.nspname = $1 AND c.relkind = \'r\'',
          [schema])
        bytes = Number(size?.bytes)
      } finally {
        await client.end()
      }
      assert.ok(bytes <= POSTGRES_RELATION_BYTES, `${bytes} bytes of relations`)
    } else {
      assert.ok(walPeak <= 2 * TENANT_WAL_BYTES, `a WAL of ${walPeak} bytes`)
      assert.ok(statSync(file).size <= SQLITE_FILE_BYTES, `${statSync(file).size} bytes`)
      const db = new Database(file, { readonly: true })
      for (const table of TABLES) counts[table] = Number(db.prepare(`SELECT count(*) FROM ${table}`).pluck().get())
      db.close()
    }
    const limits = TENANT_STORAGE_LIMITS
    assert.equal(counts.idempotency_keys, limits.keys)
    assert.ok((counts.chosen_ids ?? Infinity) <= limits.chosenIds, `${counts.chosen_ids} chosen ids`)
    assert.ok((counts.webhook_deliveries ?? Infinity) <= limits.deliveries, `${counts.webhook_deliveries} deliveries`)
    assert.ok((counts.webhook_events ?? Infinity) <= limits.events, `${counts.webhook_events} events`)
  })
}
