import assert from 'node:assert/strict'
import { test } from 'node:test'
import { runSandboxBench } from '../../bench/sandbox.js'
import { TEST_DATABASE_URL } from '../helpers/postgres.js'

/**
 * The sandbox's stated bounds at full scale (issue 34), against the real server on each store:
 * `npm run test:scale` (CI runs it; npm test runs the same harness small, test/bench/sandbox.test.ts).
 * Its own file pattern (`*.scale.ts`) keeps it out of npm test: a few minutes per store.
 */
const TENANTS = 10_000
const PLANTS = 10
const AT_ONCE = 2000
const MAX_RSS_MB = 300

/** Per tenant, with its 10 plants: a SQLite file checkpointed and closed (its tables' pages, no WAL). */
const MAX_SQLITE_TENANT_BYTES = 128 * 1024
/** Per tenant schema: its tables, indexes and sequences (about 30 relations of one or two pages each). */
const MAX_POSTGRES_TENANT_BYTES = 320 * 1024
/** Per tenant, what pg_database_size grows by: the relations and their rows in the system catalogs. */
const MAX_POSTGRES_GROWTH_BYTES = 512 * 1024

/**
 * CI sets fewer PostgreSQL tenants to fit its time (.ci/run): each is a schema made by DDL, so the full
 * size takes most of an hour on two cores. Never fewer than twice the written-at-once line, so tenants
 * are still evicted, reopened and made while others wait, as at full size.
 */
const POSTGRES_TENANTS = Number(process.env.TEST_SCALE_POSTGRES_TENANTS ?? TENANTS)
assert.ok(Number.isInteger(POSTGRES_TENANTS) && POSTGRES_TENANTS >= 2 * AT_ONCE,
  `TEST_SCALE_POSTGRES_TENANTS: an integer of at least ${2 * AT_ONCE}`)

const stores = [
  { name: 'SQLite', tenants: TENANTS },
  ...(TEST_DATABASE_URL === undefined
    ? []
    : [{ name: 'PostgreSQL', tenants: POSTGRES_TENANTS, postgres: TEST_DATABASE_URL }])
]

for (const store of stores) {
  test(`sandbox at scale on ${store.name}: ${store.tenants} tenants x ${PLANTS} plants, ${AT_ONCE} written at once: ` +
    `every write lands, peak RSS <= ${MAX_RSS_MB} MB, disk bounded, expiry deletes every tenant`, async (t) => {
    const result = await runSandboxBench({
      tenants: store.tenants,
      plantsPerTenant: PLANTS,
      concurrency: AT_ONCE,
      ...(store.postgres !== undefined && { postgres: store.postgres })
    })
    t.diagnostic(JSON.stringify(result))
    assert.deepEqual({
      written: result.plantsWritten,
      failures: result.failures,
      stored: result.tenantsStored,
      left: result.tenantsAfterExpiry
    },
    { written: store.tenants * PLANTS, failures: 0, stored: store.tenants, left: 0 })
    assert.ok(result.peakRssMb !== null && result.peakRssMb <= MAX_RSS_MB, `peak RSS ${result.peakRssMb ?? ''} MB`)
    if (store.postgres === undefined) {
      assert.ok(result.diskBytes <= store.tenants * MAX_SQLITE_TENANT_BYTES, `${result.diskBytes} bytes on disk`)
    } else {
      assert.ok(result.diskBytes <= store.tenants * MAX_POSTGRES_TENANT_BYTES,
        `${result.diskBytes} bytes of tenant relations`)
      assert.ok((result.databaseGrowthBytes ?? 0) <= store.tenants * MAX_POSTGRES_GROWTH_BYTES,
        `pg_database_size grew ${result.databaseGrowthBytes ?? ''} bytes`)
    }
  })
}
