/**
 * The sandbox at scale: N tenants (10,000 by default) each write P plants (10), C tenants (2,000)
 * at once, against a real server started as `npm start` runs it. Prints the server's peak resident
 * memory, the disk its tenants take, and whether an expiry sweep leaves their files gone.
 *
 *   npm run build:test && node build/bench/sandbox.js [--tenants 10000] [--plants 10] [--concurrency 2000]
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
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
}

export interface SandboxBenchResult {
  tenants: number
  plantsWritten: number
  /** Writes not answered 201 in the end. */
  failures: number
  /** 503s retried after their Retry-After, as a client should (every open store was in use). */
  retries: number
  /** The server's peak resident memory over the whole run (VmHWM), MB. */
  peakRssMb: number | null
  /** Allocated bytes of the tenant folder after the server stopped (every store checkpointed and closed). */
  diskBytes: number
  tenantFiles: number
  /** Tenant files left once a restart with a short SANDBOX_TTL_MS has swept them. */
  filesAfterExpiry: number
  seconds: number
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

// SQLITE_SYNCHRONOUS=normal, as docs/operations.md advises for a sandbox: its data is disposable, an fsync per write is not.
const SETTINGS = { API_TOKENS: undefined, SANDBOX: '1', SANDBOX_SEED: 'none', SQLITE_SYNCHRONOUS: 'normal', RATE_LIMIT_MAX: '0', SANDBOX_RATE_LIMIT_PER_ADDRESS: '0', ...SERVER_ENV }

export async function runSandboxBench (options: SandboxBenchOptions): Promise<SandboxBenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-sandbox-bench-'))
  try {
    const databaseUrl = join(dir, 'plants.db')
    const server = await startServer(undefined, {
      env: { ...SETTINGS, DATABASE_URL: databaseUrl, SANDBOX_MAX_TENANTS: String(options.tenants), SANDBOX_MAX_PLANTS: String(options.plantsPerTenant), ...(options.openTenants !== undefined && { SANDBOX_OPEN_TENANTS: String(options.openTenants) }) },
      nodeArgs: SERVER_NODE_FLAGS,
      logFile: join(dir, 'server.log')
    })
    const started = performance.now()
    let next = 0
    let failures = 0
    let written = 0
    let retries = 0
    const run = randomBytes(4).toString('hex')
    const worker = async (): Promise<void> => {
      for (let tenant = next++; tenant < options.tenants; tenant = next++) {
        const headers = { authorization: `Bearer bench-${run}-tenant-${tenant}`, 'content-type': 'application/json' }
        for (let plant = 0; plant < options.plantsPerTenant; plant++) {
          let res = await fetch(`${server.baseUrl}/plants`, { method: 'POST', headers, body: JSON.stringify({ name: `plant ${plant}`, tag: 'bench' }) })
          await res.arrayBuffer()
          while (res.status === 503 && retries < options.tenants * options.plantsPerTenant) {
            retries++
            await sleep(Number(res.headers.get('retry-after') ?? '1') * 1000)
            res = await fetch(`${server.baseUrl}/plants`, { method: 'POST', headers, body: JSON.stringify({ name: `plant ${plant}`, tag: 'bench' }) })
            await res.arrayBuffer()
          }
          if (res.status === 201) written++
          else failures++
        }
      }
    }
    await Promise.all(Array.from({ length: options.concurrency }, worker))
    const seconds = (performance.now() - started) / 1000
    const peak = peakRssMb(server.child.pid ?? -1)
    await server.stop()
    const { bytes, tenantFiles } = allocated(tenantDirectory(databaseUrl))

    // The same folder with a TTL the tenants have all outlived: the sweep deletes every file.
    await sleep(1000)
    const sweeper = await startServer(undefined, { env: { ...SETTINGS, DATABASE_URL: databaseUrl, SANDBOX_TTL_MS: '1000' }, logFile: join(dir, 'sweeper.log') })
    let left = tenantFiles
    for (let waited = 0; waited < 300_000 && left > 0; waited += 250) {
      await sleep(250)
      left = allocated(tenantDirectory(databaseUrl)).tenantFiles
    }
    await sweeper.stop()
    return { tenants: options.tenants, plantsWritten: written, failures, retries, peakRssMb: peak, diskBytes: bytes, tenantFiles, filesAfterExpiry: left, seconds }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { tenants: { type: 'string', default: '10000' }, plants: { type: 'string', default: '10' }, concurrency: { type: 'string', default: '2000' } } })
  const options = { tenants: Number(values.tenants), plantsPerTenant: Number(values.plants), concurrency: Number(values.concurrency) }
  const result = await runSandboxBench(options)
  const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1)
  process.stdout.write(
    `sandbox: ${result.tenants} tenants x ${options.plantsPerTenant} plants, ${options.concurrency} tenants at once, SQLite\n` +
    `  plants written: ${result.plantsWritten} (failures: ${result.failures}; 503s retried after Retry-After: ${result.retries}) in ${result.seconds.toFixed(1)} s\n` +
    `  peak RSS of the server: ${result.peakRssMb?.toFixed(1) ?? 'n/a'} MB\n` +
    `  disk: ${mb(result.diskBytes)} MB for ${result.tenantFiles} tenant files (${(result.diskBytes / Math.max(1, result.tenantFiles) / 1024).toFixed(1)} KB each)\n` +
    `  tenant files left after an expiry sweep: ${result.filesAfterExpiry}\n`)
}
