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
  /** 503s (every open store in use) and failed connections, retried after their Retry-After. */
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
  const running: Array<{ stop: () => Promise<number | null> }> = []
  try {
    const databaseUrl = join(dir, 'plants.db')
    const server = await startServer(undefined, {
      env: { ...SETTINGS, DATABASE_URL: databaseUrl, SANDBOX_MAX_TENANTS: String(options.tenants), SANDBOX_MAX_PLANTS: String(options.plantsPerTenant), ...(options.openTenants !== undefined && { SANDBOX_OPEN_TENANTS: String(options.openTenants) }) },
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
    const post = async (headers: Record<string, string>, body: string): Promise<{ status: number, retryAfter: number }> => {
      try {
        const res = await fetch(`${server.baseUrl}/plants`, { method: 'POST', headers, body })
        await res.arrayBuffer()
        return { status: res.status, retryAfter: Number(res.headers.get('retry-after') ?? '1') }
      } catch {
        return { status: 0, retryAfter: 1 }
      }
    }
    const worker = async (): Promise<void> => {
      for (let tenant = next++; tenant < options.tenants; tenant = next++) {
        const headers = { authorization: `Bearer bench-${run}-tenant-${tenant}`, 'content-type': 'application/json' }
        for (let plant = 0; plant < options.plantsPerTenant; plant++) {
          const body = JSON.stringify({ name: `plant ${plant}`, tag: 'bench' })
          let answer = await post(headers, body)
          // A 503 (every open store in use) or a failed connection is retried after Retry-After, as a client should.
          for (let attempt = 0; (answer.status === 503 || answer.status === 0) && attempt < 20; attempt++) {
            retries++
            await sleep(answer.retryAfter * 1000)
            answer = await post(headers, body)
          }
          if (answer.status === 201) written++
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
    running.push(sweeper)
    let left = tenantFiles
    for (let waited = 0; waited < 300_000 && left > 0; waited += 250) {
      await sleep(250)
      left = allocated(tenantDirectory(databaseUrl)).tenantFiles
    }
    await sweeper.stop()
    return { tenants: options.tenants, plantsWritten: written, failures, retries, peakRssMb: peak, diskBytes: bytes, tenantFiles, filesAfterExpiry: left, seconds }
  } finally {
    for (const server of running) await server.stop()
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
    `  plants written: ${result.plantsWritten} (failures: ${result.failures}; retried 503s and failed connections: ${result.retries}) in ${result.seconds.toFixed(1)} s\n` +
    `  peak RSS of the server: ${result.peakRssMb?.toFixed(1) ?? 'n/a'} MB\n` +
    `  disk: ${mb(result.diskBytes)} MB for ${result.tenantFiles} tenant files (${(result.diskBytes / Math.max(1, result.tenantFiles) / 1024).toFixed(1)} KB each)\n` +
    `  tenant files left after an expiry sweep: ${result.filesAfterExpiry}\n`)
}
