/**
 * The sandbox at scale: N tenants (10,000 by default) each write P plants (10), C tenants (2,000)
 * at once, against a real server started as `npm start` runs it, on SQLite or (`--db
 * postgres://…`) on a scratch schema of a PostgreSQL database. Prints the server's peak resident
 * memory, the disk its tenants take, and whether a restart with a short SANDBOX_TTL_MS deletes
 * every tenant's file or schema.
 *
 *   npm run build:test && node build/bench/sandbox.js [--tenants 10000] [--plants 10] [--concurrency 2000] \
 *     [--db postgres://…] [--open N]
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { tenantDirectory } from '../src/sandbox/sqlite-tenants.js'
import { startServer } from '../test/helpers/server-process.js'
import { peakRssMb, SERVER_ENV, SERVER_NODE_FLAGS } from './measure.js'

export interface SandboxBenchOptions {
  tenants: number
  plantsPerTenant: number
  /** Tenants written to at once. */
  concurrency: number
  /** SANDBOX_OPEN_TENANTS; unset: its default. */
  openTenants?: number
  /** A PostgreSQL server URL: the sandbox runs on a scratch schema there, dropped with its tenants' at the end. */
  postgres?: string
  /** How long the restart with a short TTL may take to delete every tenant. */
  expiryTimeoutMs?: number
}

export interface SandboxBenchResult {
  store: 'SQLite' | 'PostgreSQL'
  tenants: number
  plantsWritten: number
  /** Writes not answered 201 in the end. */
  failures: number
  /** Their last answers: status (0: no connection) and message, with how many. */
  failedAnswers: Record<string, number>
  /** The server's error log lines (LOG_LEVEL=error), the first few. */
  serverErrors: string[]
  /** 503s (every open store in use), 408s and failed connections, retried after their Retry-After. */
  retries: number
  /** The server's peak resident memory over the whole run (VmHWM), MB. */
  peakRssMb: number | null
  /**
   * SQLite: allocated bytes of the tenant folder after the server stopped (every store
   * checkpointed and closed). PostgreSQL: the tenants' relations (tables, indexes, sequences).
   */
  diskBytes: number
  /** PostgreSQL: how much pg_database_size grew over the run (the catalog's rows included). */
  databaseGrowthBytes?: number
  /** Tenant files or schemas there once the run ended. */
  tenantsStored: number
  /** Tenant files or schemas left once a restart with a short SANDBOX_TTL_MS has swept them. */
  tenantsAfterExpiry: number
  seconds: number
  expirySeconds: number
}

function allocated (dir: string): { bytes: number, tenantFiles: number } {
  let bytes = 0
  let tenantFiles = 0
  for (const name of readdirSync(dir)) {
    // The sweep may delete a file between the listing and its stat.
    bytes += (statSync(join(dir, name), { throwIfNoEntry: false })?.blocks ?? 0) * 512
    if (/^[0-9a-f]{64}\.db$/.test(name)) tenantFiles++
  }
  return { bytes, tenantFiles }
}

// SQLITE_SYNCHRONOUS=normal, as docs/operations.md advises for a sandbox: its data is disposable, an fsync per write is
// not.
const SETTINGS = {
  API_TOKENS: undefined,
  LOG_LEVEL: 'error',
  SANDBOX: '1',
  SANDBOX_SEED: 'none',
  SQLITE_SYNCHRONOUS: 'normal',
  RATE_LIMIT_MAX: '0',
  SANDBOX_RATE_LIMIT_PER_ADDRESS: '0',
  ...SERVER_ENV
}

/** Where the sandbox keeps its tenants, and how the run counts and measures them. */
interface SandboxPlace {
  store: SandboxBenchResult['store']
  databaseUrl: string
  /** Tenant files or schemas there now. */
  count: () => Promise<number>
  disk: () => Promise<{ bytes: number, growth?: number }>
  remove: () => Promise<void>
}

function sqlitePlace (dir: string): SandboxPlace {
  const databaseUrl = join(dir, 'plants.db')
  return {
    store: 'SQLite',
    databaseUrl,
    count: async () => allocated(tenantDirectory(databaseUrl)).tenantFiles,
    disk: async () => ({ bytes: allocated(tenantDirectory(databaseUrl)).bytes }),
    remove: async () => {}
  }
}

const CATALOGS = ['pg_attribute', 'pg_depend', 'pg_class', 'pg_index', 'pg_constraint', 'pg_type', 'pg_attrdef',
  'pg_sequence', 'pg_namespace', 'pg_trigger', 'pg_shdepend']

async function postgresPlace (server: string): Promise<SandboxPlace> {
  const schema = `plant_store_scale_${randomBytes(6).toString('hex')}`
  const url = new URL(server)
  url.searchParams.set('schema', schema)
  const client = new pg.Client({ connectionString: server })
  await client.connect()
  const size = async (): Promise<number> => Number(
    (await client.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n')).rows[0]?.n)
  const before = await size()
  // The tenants' schemas are named from the sandbox's schema and their keys: only the registry knows them.
  const tenantSchemas = 'SELECT n.nspname FROM pg_namespace n WHERE n.nspname LIKE \'sbx\\_%\' AND n.nspname IN ' +
    `(SELECT schema_name FROM ${schema}.sandbox_tenants)`
  let seen: string[] = []
  return {
    store: 'PostgreSQL',
    databaseUrl: url.toString(),
    count: async () => {
      const known = (await client.query<{ nspname: string }>(tenantSchemas).catch(() => ({ rows: [] }))).rows.map(
        (row) => row.nspname)
      if (known.length > seen.length) seen = known
      return Number(
        (await client.query<{ n: string }>('SELECT count(*) AS n FROM pg_namespace WHERE nspname = ANY ($1)',
          [seen])).rows[0]?.n)
    },
    disk: async () => {
      const { rows: [row] } = await client.query<{ n: string | null }>(
        `SELECT sum(pg_total_relation_size(c.oid)) AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE c.relkind IN ('r', 'S') AND n.nspname IN (SELECT schema_name FROM ${schema}.sandbox_tenants)`)
      return { bytes: Number(row?.n ?? 0), growth: await size() - before }
    },
    remove: async () => {
      try {
        const names = (await client.query<{ nspname: string }>(tenantSchemas).catch(() => ({ rows: [] }))).rows.map(
          (row) => row.nspname)
        for (const name of new Set([...seen, ...names])) await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`)
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
        // Thousands of schemas made and dropped leave the catalogs full of dead rows: every later
        // DDL on this database (the next tests') would wade through them until autovacuum came by.
        await client.query(`VACUUM ${CATALOGS.map((table) => `pg_catalog.${table}`).join(', ')}`)
      } finally {
        await client.end()
      }
    }
  }
}

/** Answers a client repeats: 503, 408, and 0 for a connection that failed. */
const RETRIED = new Set([503, 408, 0])

/** Tries of one write after its first 503 before it counts as failed. */
const RETRIES = 60

export async function runSandboxBench (options: SandboxBenchOptions): Promise<SandboxBenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-sandbox-bench-'))
  const running: Array<{ stop: () => Promise<number | null> }> = []
  const place = options.postgres === undefined ? sqlitePlace(dir) : await postgresPlace(options.postgres)
  try {
    const { databaseUrl } = place
    const server = await startServer(undefined, {
      env: {
        ...SETTINGS,
        DATABASE_URL: databaseUrl,
        SANDBOX_MAX_TENANTS: String(options.tenants),
        SANDBOX_MAX_PLANTS: String(options.plantsPerTenant),
        ...(options.openTenants !== undefined && { SANDBOX_OPEN_TENANTS: String(options.openTenants) })
      },
      nodeArgs: SERVER_NODE_FLAGS,
      logFile: join(dir, 'server.log')
    })
    running.push(server)
    const started = performance.now()
    let next = 0
    let failures = 0
    let written = 0
    let retries = 0
    const run = randomBytes(4).toString('hex')
    /** The status, or 0 when the connection failed (the client's own limits under thousands of sockets). */
    const failedAnswers: Record<string, number> = {}
    const post = async (headers: Record<string, string>,
      body: string): Promise<{ status: number, retryAfter: number, message: string }> => {
      try {
        const res = await fetch(`${server.baseUrl}/plants`, { method: 'POST', headers, body })
        const text = await res.text()
        const message = res.status === 201 ? '' : String((JSON.parse(text) as { message?: unknown }).message)
        return { status: res.status, retryAfter: Number(res.headers.get('retry-after') ?? '1'), message }
      } catch (err) {
        return { status: 0, retryAfter: 1, message: (err as Error).message }
      }
    }
    const worker = async (): Promise<void> => {
      for (let tenant = next++; tenant < options.tenants; tenant = next++) {
        const headers = { authorization: `Bearer bench-${run}-tenant-${tenant}`, 'content-type': 'application/json' }
        for (let plant = 0; plant < options.plantsPerTenant; plant++) {
          const body = JSON.stringify({ name: `plant ${plant}`, tag: 'bench' })
          // Keyed, as a client retrying a create should be: a retry whose first try landed unseen
          // (its answer lost with the connection) is answered that first 201, even at the tenant's cap.
          const keyed = { ...headers, 'idempotency-key': `plant-${plant}` }
          let answer = await post(keyed, body)
          // A 503 (every open store in use), a 408 (the request did not arrive whole within
          // REQUEST_TIMEOUT_MS, so nothing was done with it; browsers repeat those too) or a failed
          // connection is retried after Retry-After, as a client should. The budget is a client's
          // patience, not a speed check: on a slower machine a write can be refused 20 times in a row
          // at 30 s waits (SANDBOX_OPEN_WAIT_MS) and land later.
          for (let attempt = 0; RETRIED.has(answer.status) && attempt < RETRIES; attempt++) {
            retries++
            await sleep(answer.retryAfter * 1000)
            answer = await post(keyed, body)
          }
          if (answer.status === 201) {
            written++
          } else {
            failures++
            const what = `${answer.status} ${answer.message}`
            failedAnswers[what] = (failedAnswers[what] ?? 0) + 1
          }
        }
      }
    }
    await Promise.all(Array.from({ length: options.concurrency }, worker))
    const seconds = (performance.now() - started) / 1000
    const peak = peakRssMb(server.child.pid ?? -1)
    await server.stop()
    // Warnings and worse: the banner is a JSON log line too.
    const serverErrors = server.stdout().split('\n')
      .filter((line) => line.startsWith('{') && Number((JSON.parse(line) as { level?: unknown }).level) >= 40)
      .slice(0, 5)
    const disk = await place.disk()
    const stored = await place.count()

    // The same store with a TTL the tenants have all outlived: the sweep deletes every one.
    await sleep(1000)
    const expiryStarted = performance.now()
    const sweeper = await startServer(undefined, {
      env: { ...SETTINGS, DATABASE_URL: databaseUrl, SANDBOX_TTL_MS: '1000' },
      logFile: join(dir, 'sweeper.log')
    })
    running.push(sweeper)
    let left = stored
    for (let waited = 0; waited < (options.expiryTimeoutMs ?? 600_000) && left > 0; waited += 250) {
      await sleep(250)
      left = await place.count()
    }
    const expirySeconds = (performance.now() - expiryStarted) / 1000
    await sweeper.stop()
    return {
      store: place.store,
      tenants: options.tenants,
      plantsWritten: written,
      failures,
      failedAnswers,
      serverErrors,
      retries,
      peakRssMb: peak,
      diskBytes: disk.bytes,
      ...(disk.growth !== undefined && { databaseGrowthBytes: disk.growth }),
      tenantsStored: stored,
      tenantsAfterExpiry: left,
      seconds,
      expirySeconds
    }
  } finally {
    for (const server of running) await server.stop()
    await place.remove()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs(
    {
      options: {
        tenants: { type: 'string', default: '10000' },
        plants: { type: 'string', default: '10' },
        concurrency: { type: 'string', default: '2000' },
        db: { type: 'string' },
        open: { type: 'string' }
      }
    })
  const options = {
    tenants: Number(values.tenants),
    plantsPerTenant: Number(values.plants),
    concurrency: Number(values.concurrency),
    ...(values.db !== undefined && { postgres: values.db }),
    ...(values.open !== undefined && { openTenants: Number(values.open) })
  }
  const result = await runSandboxBench(options)
  const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1)
  const what = result.store === 'SQLite' ? 'tenant files' : 'tenant schemas'
  process.stdout.write(
    `sandbox: ${result.tenants} tenants x ${options.plantsPerTenant} plants, ${options.concurrency} tenants at ` +
      `once, ${result.store}` +
    `${options.openTenants === undefined ? '' : `, SANDBOX_OPEN_TENANTS=${options.openTenants}`}\n` +
    `  plants written: ${result.plantsWritten} (failures: ${result.failures}; retried 503s, 408s and ` +
      `failed connections: ${result.retries}) in ${result.seconds.toFixed(1)} s\n` +
    `  peak RSS of the server: ${result.peakRssMb?.toFixed(1) ?? 'n/a'} MB\n` +
    `  disk: ${mb(result.diskBytes)} MB for ${result.tenantsStored} ${what} ` +
      `(${(result.diskBytes / Math.max(1, result.tenantsStored) / 1024).toFixed(1)} KB each)` +
    (result.databaseGrowthBytes === undefined ? '' : `; pg_database_size grew ${mb(result.databaseGrowthBytes)} MB`) +
    '\n' +
    `  ${what} left after an expiry sweep: ${result.tenantsAfterExpiry} (${result.expirySeconds.toFixed(1)} s ` +
      'after the restart)\n' +
    (result.failures === 0
      ? ''
      : `  failed answers: ${JSON.stringify(result.failedAnswers)}\n  server ` +
      `errors:\n${result.serverErrors.join('\n')}\n`))
}
