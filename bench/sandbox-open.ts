/**
 * Where a sandbox tenant's open goes, and what an open store costs in memory: the app's own
 * registry (no HTTP), on SQLite or PostgreSQL. Phase A creates N tenants (one plant each) with
 * SANDBOX_OPEN_TENANTS stores open, so each open also pays a close; phase B opens them again;
 * phase C holds M stores open at once and reports resident memory per open store.
 *
 *   npm run build:test && node --expose-gc build/bench/sandbox-open.js [--db postgres://…] [--tenants 300] [--hold 500]
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { buildApp } from '../src/main/app.js'
import { loadConfig } from '../src/config/load-config.js'
import type { TenantLease } from '../src/sandbox/tenants.js'
import type { SandboxTenant } from '../plugins/app/sandbox-tenants.js'

const { values } = parseArgs(
  {
    options: {
      db: { type: 'string' },
      tenants: { type: 'string', default: '300' },
      hold: { type: 'string', default: '500' },
      open: { type: 'string', default: '50' },
      seed: { type: 'string', default: 'none' }
    }
  })
const tenants = Number(values.tenants)
const hold = Number(values.hold)
const dir = mkdtempSync(join(tmpdir(), 'plant-store-sandbox-open-'))
const schema = `plant_store_bench_${randomBytes(4).toString('hex')}`
const databaseUrl = values.db === undefined
  ? join(dir,
    'plants.db')
  : (() => {
      const url = new URL(values.db); url.searchParams.set('schema',
        schema); return url.toString()
    })()
const keyOf = (i: number): string => createHash('sha256').update(`bench-open-${i}`).digest('hex')
const rssMb = (): number => process.memoryUsage().rss / 1024 / 1024
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {})

async function run (openTenants: number): Promise<void> {
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    SANDBOX: '1',
    SANDBOX_SEED: values.seed,
    SANDBOX_OPEN_TENANTS: String(openTenants),
    SANDBOX_MAX_TENANTS: '1000000',
    LOG_LEVEL: 'silent',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    SQLITE_SYNCHRONOUS: 'normal',
    RATE_LIMIT_MAX: '0'
  })
  const app = await buildApp(config)
  await app.ready()
  const registry = app.sandbox?.registry
  if (registry === undefined) throw new Error('not a sandbox')
  const phase = async (name: string, from: number, count: number, write: boolean): Promise<void> => {
    const started = performance.now()
    for (let i = from; i < from + count; i++) {
      const lease = await registry.acquire(keyOf(i))
      if (write) await lease.tenant.store.plants.create({ name: 'bench' })
      else await lease.tenant.store.plants.list({ limit: 10 })
      lease.release()
    }
    const ms = (performance.now() - started) / count
    process.stdout.write(`${name}: ${ms.toFixed(2)} ms per tenant (${count}, ${openTenants} open at most)\n`)
  }
  await phase('A new tenant, open + 1 write (+ a close)', 0, tenants, true)
  await phase('B existing tenant, open + 1 read (+ a close)', 0, tenants, false)
  await app.close()
}

async function memory (): Promise<void> {
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    SANDBOX: '1',
    SANDBOX_SEED: values.seed,
    SANDBOX_OPEN_TENANTS: String(hold + 10),
    SANDBOX_MAX_TENANTS: '1000000',
    LOG_LEVEL: 'silent',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    SQLITE_SYNCHRONOUS: 'normal'
  })
  const app = await buildApp(config)
  await app.ready()
  const registry = app.sandbox?.registry
  if (registry === undefined) throw new Error('not a sandbox')
  const leases: Array<TenantLease<SandboxTenant>> = []
  // Warm: a few opens so code and caches are loaded before the baseline.
  for (let i = 0; i < 5; i++) (await registry.acquire(keyOf(100_000 + i))).release()
  gc()
  const before = rssMb()
  const started = performance.now()
  for (let i = 0; i < hold; i++) {
    const lease = await registry.acquire(keyOf(200_000 + i))
    await lease.tenant.store.plants.create({ name: 'bench' })
    leases.push(lease)
  }
  const ms = (performance.now() - started) / hold
  gc()
  const after = rssMb()
  process.stdout.write(
    `C ${hold} stores held open: ${((after - before) * 1024 / hold).toFixed(1)} KB RSS each (${before.toFixed(0)} ` +
      `-> ${after.toFixed(0)} MB), ${ms.toFixed(2)} ms per open + write\n`)
  for (const lease of leases) lease.release()
  await app.close()
}

try {
  await run(Number(values.open))
  if (hold > 0) await memory()
} finally {
  rmSync(dir, { recursive: true, force: true })
  if (values.db !== undefined) {
    const client = new pg.Client({ connectionString: values.db })
    await client.connect()
    const { rows } = await client.query<{ schema_name: string }>(
      `SELECT schema_name FROM ${schema}.sandbox_tenants`).catch(() => ({ rows: [] as Array<{ schema_name: string }> }))
    for (const row of rows) await client.query(`DROP SCHEMA IF EXISTS ${row.schema_name} CASCADE`)
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await client.end()
  }
}
