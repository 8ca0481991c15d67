/**
 * `npm run bench`: drives the real, built server with autocannon and compares every workload with a
 * bare Fastify route measured in the same run. See the README's "Performance" section.
 *
 *   npm run bench -- [--quick] [--duration 10] [--warmup 3] [--connections 32]
 *                    [--only read,delete] [--db <DATABASE_URL>] [--log-level warn] [--cpu-prof] [--metrics]
 *
 * --metrics turns the Prometheus metrics on in the server (METRICS_PORT) and scrapes them once a
 * second while it is measured, as a Prometheus server would (more often, to be conservative): run
 * the same workloads with and without it to see what metrics cost (README, "Operating it").
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, fdatasyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import autocannon from 'autocannon'
import { buildApp } from '../src/app.js'
import { loadConfig, type LogLevel } from '../src/load-config.js'
import type { PlantStore } from '../src/store/store.js'

type Sync = 'normal' | 'full'
type WorkloadName = 'ceiling' | 'read' | 'list' | 'create' | 'delete'

interface Options {
  duration: number
  warmup: number
  connections: number
  only: Set<WorkloadName>
  db: string | undefined
  logLevel: LogLevel
  cpuProf: boolean
  quick: boolean
  metrics: boolean
}

interface Row {
  workload: WorkloadName
  sync: Sync | null
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  requests: number
  non2xx: number
  errors: number
  peakRssMb: number | null
  /** Server CPU time per request: steadier than req/s on a shared machine. */
  cpuUsPerRequest: number | null
  ratioToCeiling: number | null
}

/** What autocannon sends: one request shape, optionally rewritten per request. */
interface Traffic {
  method: 'GET' | 'POST' | 'DELETE'
  path: string
  body?: string
  /** Called for every request: returns the path to use (distinct ids, rotating cursors). */
  nextPath?: () => string
}

const HERE = dirname(fileURLToPath(import.meta.url))
const SERVER = join(HERE, '..', 'src', 'server.js')
const CEILING = join(HERE, 'ceiling.js')
const RESULTS = join(HERE, '..', '..', 'bench', 'results')
const WORKLOADS: readonly WorkloadName[] = ['ceiling', 'read', 'list', 'create', 'delete']
const SEEDED_PLANTS = 10_000
/**
 * As `npm start` runs the service: a 4 MB young generation keeps the resident set about 20 MB
 * smaller under load, at no cost in throughput (README, "Performance").
 */
const SERVER_NODE_FLAGS = ['--max-semi-space-size=4']
const TOKEN = randomBytes(24).toString('base64url')

function parseOptions (): Options {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string', default: '32' },
      only: { type: 'string' },
      db: { type: 'string' },
      // Request logging at info costs more than the rest of a read (README, "Performance").
      'log-level': { type: 'string', default: 'warn' },
      'cpu-prof': { type: 'boolean', default: false },
      metrics: { type: 'boolean', default: false }
    }
  })
  const number = (text: string | undefined, fallback: number, name: string): number => {
    if (text === undefined) return fallback
    const value = Number(text)
    if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`)
    return value
  }
  const only = values.only === undefined ? WORKLOADS : values.only.split(',').map((name) => name.trim())
  for (const name of only) {
    if (!WORKLOADS.includes(name as WorkloadName)) throw new Error(`--only: unknown workload ${name} (${WORKLOADS.join(', ')})`)
  }
  return {
    quick: values.quick,
    duration: number(values.duration, values.quick ? 1 : 10, 'duration'),
    warmup: number(values.warmup, values.quick ? 0.5 : 3, 'warmup'),
    connections: number(values.connections, 32, 'connections'),
    // The ceiling is always measured: every figure is read against it.
    only: new Set<WorkloadName>(['ceiling', ...only as WorkloadName[]]),
    db: values.db,
    logLevel: values['log-level'] as LogLevel,
    cpuProf: values['cpu-prof'],
    metrics: values.metrics
  }
}

/** A child process that prints "... listening on http://host:port" once it is ready. */
class Child {
  private constructor (readonly process: ChildProcess, readonly url: string, readonly metricsUrl: string | undefined) {}

  static async start (script: string, env: NodeJS.ProcessEnv, logFile: string, nodeArgs: string[] = []): Promise<Child> {
    // Output goes to a file, not a pipe: draining a pipe would cost the load generator CPU.
    const fd = openSync(logFile, 'w')
    const child = spawn(process.execPath, [...nodeArgs, script], { env, stdio: ['ignore', fd, fd] })
    closeSync(fd)
    let exited = false
    child.once('exit', () => { exited = true })
    for (let waited = 0; waited < 30_000; waited += 20) {
      const output = readFileSync(logFile, 'utf8')
      const match = /listening on (http:\/\/[^\s]+)/.exec(output)
      // The banner's lines are written at once: the metrics line, when there is one, is there too.
      if (match?.[1] !== undefined) return new Child(child, match[1], /Prometheus metrics: +(http:\/\/\S+)/.exec(output)?.[1])
      if (exited) break
      await sleep(20)
    }
    child.kill('SIGKILL')
    throw new Error(`${script} did not start; its output:\n${readFileSync(logFile, 'utf8').slice(-2000)}`)
  }

  /** CPU time (user + system) the process has used, in seconds, or null where /proc is not there. */
  cpuSeconds (): number | null {
    try {
      // Fields 14 and 15 of /proc/<pid>/stat, counted after the parenthesised command name; USER_HZ is 100.
      const fields = readFileSync(`/proc/${this.process.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
      return (Number(fields[11]) + Number(fields[12])) / 100
    } catch {
      return null
    }
  }

  /** Peak resident memory (VmHWM) in MB, or null where /proc is not there. */
  peakRssMb (): number | null {
    try {
      const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.process.pid}/status`, 'utf8'))
      return match?.[1] === undefined ? null : Number(match[1]) / 1024
    } catch {
      return null
    }
  }

  async stop (): Promise<void> {
    if (this.process.exitCode !== null) return
    const exited = new Promise((resolve) => this.process.once('exit', resolve))
    this.process.kill('SIGTERM')
    await exited
  }
}

/**
 * The median time of a 4 KiB append plus fdatasync in `directory`, in ms. Durable writes cannot be
 * answered faster than this: under `full`, throughput is at most about connections / this.
 */
function fsyncLatencyMs (directory: string): number {
  const file = join(directory, 'fsync-probe')
  const fd = openSync(file, 'w')
  const times: number[] = []
  try {
    for (let i = 0; i < 50; i++) {
      const start = process.hrtime.bigint()
      writeSync(fd, Buffer.alloc(4096))
      fdatasyncSync(fd)
      times.push(Number(process.hrtime.bigint() - start) / 1e6)
    }
  } finally {
    closeSync(fd)
    rmSync(file, { force: true })
  }
  return times.sort((a, b) => a - b)[times.length >> 1] ?? 0
}

/** Fills a database through the PlantStore contract, so any backend DATABASE_URL names is seeded alike. */
async function seed (databaseUrl: string, count: number): Promise<bigint[]> {
  const app = await buildApp(loadConfig({
    DATABASE_URL: databaseUrl, API_TOKENS: TOKEN, LOG_LEVEL: 'silent', SQLITE_SYNCHRONOUS: 'normal'
  }))
  try {
    await app.ready()
    const store: PlantStore = app.store
    const ids: bigint[] = []
    for (let start = 0; start < count; start += 1000) {
      const chunk = Array.from({ length: Math.min(1000, count - start) }, (_, i) =>
        store.create({ name: `Plant ${start + i}`, tag: (start + i) % 2 === 0 ? 'indoor' : 'outdoor' }))
      for (const { plant } of await Promise.all(chunk)) ids.push(plant.id)
    }
    return ids
  } finally {
    await app.close()
  }
}

async function drive (url: string, traffic: Traffic, seconds: number, connections: number): Promise<autocannon.Result> {
  const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }
  if (traffic.body !== undefined) headers['content-type'] = 'application/json'
  const { nextPath } = traffic
  return await autocannon({
    url,
    connections,
    duration: seconds,
    requests: [{
      method: traffic.method,
      path: traffic.path,
      headers,
      ...(traffic.body === undefined ? {} : { body: traffic.body }),
      ...(nextPath === undefined ? {} : { setupRequest: (request) => ({ ...request, path: nextPath() }) })
    }]
  })
}

/** GETs the metrics once a second (each scrape checked), until stopped. */
function scrapeEverySecond (url: string): { stop: () => Promise<void> } {
  let running = true
  const done = (async () => {
    // `running` is cleared by stop() while this waits.
    // eslint-disable-next-line no-unmodified-loop-condition
    while (running) {
      const res = await fetch(url)
      if (res.status !== 200 || !(await res.text()).includes('http_request_duration_seconds_count')) throw new Error(`scraping ${url} failed: ${res.status}`)
      await sleep(1000)
    }
  })()
  return { stop: async () => { running = false; await done } }
}

/** Cycles through `paths`; with `once`, every path is used at most once (then it says so). */
function rotate (paths: readonly string[], once: boolean): { next: () => string, exhausted: () => boolean } {
  let index = 0
  let ranOut = false
  return {
    next: () => {
      if (index >= paths.length) {
        if (once) ranOut = true
        index = once ? paths.length - 1 : 0
      }
      return paths[index++] as string
    },
    exhausted: () => ranOut
  }
}

async function main (): Promise<void> {
  const options = parseOptions()
  const work = mkdtempSync(join(tmpdir(), 'plant-store-bench-'))
  const profiles = join(RESULTS, 'profiles')
  const rows: Row[] = []
  const fsyncMs: number[] = []
  let ceilingRps = 0

  const measure = async (child: Child, workload: WorkloadName, sync: Sync | null, traffic: Traffic): Promise<Row> => {
    await drive(child.url, traffic, options.warmup, options.connections)
    const cpuBefore = child.cpuSeconds()
    const scraper = child.metricsUrl === undefined ? undefined : scrapeEverySecond(child.metricsUrl)
    const result = await drive(child.url, traffic, options.duration, options.connections).finally(() => scraper?.stop())
    const cpuAfter = child.cpuSeconds()
    const requestsPerSecond = result.requests.total / result.duration
    const row: Row = {
      workload,
      sync,
      requestsPerSecond,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      requests: result.requests.total,
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
      peakRssMb: child.peakRssMb(),
      cpuUsPerRequest: cpuBefore === null || cpuAfter === null || result.requests.total === 0
        ? null
        : (cpuAfter - cpuBefore) * 1e6 / result.requests.total,
      ratioToCeiling: null
    }
    rows.push(row)
    process.stderr.write(`  ${workload}${sync === null ? '' : ` (${sync})`}: ${Math.round(requestsPerSecond)} req/s\n`)
    return row
  }

  // Measured first and last: the machine is shared, so ratios use the faster of both.
  const measureCeiling = async (): Promise<void> => {
    const ceiling = await Child.start(CEILING, process.env, join(work, 'ceiling.log'))
    try {
      const { requestsPerSecond } = await measure(ceiling, 'ceiling', null, { method: 'GET', path: '/' })
      ceilingRps = Math.max(ceilingRps, requestsPerSecond)
    } finally {
      await ceiling.stop()
    }
  }

  const server = async (name: string, sync: Sync, seedCount: number): Promise<{ child: Child, ids: bigint[] }> => {
    const databaseUrl = options.db ?? join(work, `${name}.db`)
    const ids = await seed(databaseUrl, seedCount)
    const child = await Child.start(SERVER, {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      API_TOKENS: TOKEN,
      SQLITE_SYNCHRONOUS: sync,
      LOG_LEVEL: options.logLevel,
      // The abuse limits would stop one benchmark client that sends everything with one token
      // (1000 requests a minute, 1000 requests a connection by default): measure the API, not them.
      RATE_LIMIT_MAX: '0',
      MAX_REQUESTS_PER_SOCKET: '0',
      ...(options.metrics && { METRICS_PORT: '0' })
    }, join(work, `${name}.log`), [
      ...SERVER_NODE_FLAGS,
      ...(options.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`, `--cpu-prof-name=${name}.cpuprofile`] : [])
    ])
    return { child, ids }
  }

  try {
    process.stderr.write(`plant-store bench: ${options.duration}s per workload after ${options.warmup}s warm-up, ` +
      `${options.connections} connections, LOG_LEVEL=${options.logLevel}, metrics ${options.metrics ? 'on' : 'off'}\n`)
    if (options.cpuProf) mkdirSync(profiles, { recursive: true })
    fsyncMs.push(fsyncLatencyMs(work))

    await measureCeiling()
    if (options.only.has('read')) {
      const { child, ids } = await server('read', 'full', SEEDED_PLANTS)
      try {
        const paths = rotate(ids.map((id) => `/plants/${id}`), false)
        await measure(child, 'read', null, { method: 'GET', path: '/plants/1', nextPath: paths.next })
      } finally {
        await child.stop()
      }
    }

    if (options.only.has('list')) {
      const { child, ids } = await server('list', 'full', SEEDED_PLANTS)
      try {
        // Cursors from the second half of the table: deep pages, each a different one.
        const deep = ids.slice(ids.length / 2, -20).map((id) => `/plants?limit=20&after=${id}`)
        const paths = rotate(deep, false)
        await measure(child, 'list', null, { method: 'GET', path: '/plants?limit=20', nextPath: paths.next })
      } finally {
        await child.stop()
      }
    }

    for (const sync of ['normal', 'full'] as const) {
      if (options.only.has('create')) {
        const { child } = await server(`create-${sync}`, sync, SEEDED_PLANTS)
        try {
          await measure(child, 'create', sync, { method: 'POST', path: '/plants', body: '{"name":"Monstera","tag":"tropical"}' })
        } finally {
          await child.stop()
        }
      }
      if (options.only.has('delete')) {
        // Every request deletes a distinct existing plant: seed more than even the ceiling could delete.
        const needed = Math.ceil(ceilingRps * (options.warmup + options.duration) * 1.2) + 1000
        const { child, ids } = await server(`delete-${sync}`, sync, needed)
        try {
          const paths = rotate(ids.map((id) => `/plants/${id}`), true)
          await measure(child, 'delete', sync, { method: 'DELETE', path: '/plants/1', nextPath: paths.next })
          if (paths.exhausted()) throw new Error('the delete workload ran out of seeded plants')
        } finally {
          await child.stop()
        }
      }
    }
    await measureCeiling()
    fsyncMs.push(fsyncLatencyMs(work))
  } finally {
    rmSync(work, { recursive: true, force: true })
  }

  // The faster of the two ceilings: what the framework can do here, not what a noisy moment let it do
  // (the first is often a third slower on this VM), so ratios are never flattered by a slow ceiling.
  const ceiling = Math.max(...rows.filter((row) => row.workload === 'ceiling').map((row) => row.requestsPerSecond))
  for (const row of rows) row.ratioToCeiling = row.requestsPerSecond / ceiling
  report(rows, options, fsyncMs)

  // Speed is never a failure; a broken run is (no traffic, errors, or answers other than 2xx).
  const broken = rows.filter((row) => row.requests === 0 || row.errors > 0 || row.non2xx > 0)
  if (broken.length > 0) {
    throw new Error(`invalid run: ${broken.map((row) => `${row.workload}${row.sync === null ? '' : ` (${row.sync})`}`).join(', ')} had no traffic, errors or non-2xx answers`)
  }
}

function report (rows: Row[], options: Options, fsyncMs: number[]): void {
  const header = ['workload', 'sync', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'peak RSS MB', 'CPU µs/req', 'ratio']
  const lines = rows.map((row) => [
    row.workload,
    row.sync ?? '',
    String(Math.round(row.requestsPerSecond)),
    String(row.p50Ms),
    String(row.p99Ms),
    String(row.non2xx),
    String(row.errors),
    row.peakRssMb === null ? 'n/a' : row.peakRssMb.toFixed(1),
    row.cpuUsPerRequest === null ? 'n/a' : row.cpuUsPerRequest.toFixed(0),
    row.ratioToCeiling === null ? 'n/a' : row.ratioToCeiling.toFixed(2)
  ])
  const widths = header.map((title, column) => Math.max(title.length, ...lines.map((line) => (line[column] ?? '').length)))
  const format = (cells: string[]): string => `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(' | ')} |`
  const table = [format(header), `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`, ...lines.map(format)].join('\n')

  const cpu = cpus()
  const machine = `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GB RAM, Node.js ${process.version}, ${process.platform}`
  const date = new Date().toISOString()
  const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`
  const fsync = `fdatasync of a 4 KiB append: ${fsyncMs.map((ms) => `${ms.toFixed(2)} ms`).join(' (start), ')} (end)`
  process.stdout.write(`\n${date}  ${machine}\n${command}  (LOG_LEVEL=${options.logLevel}, metrics ${options.metrics ? 'on, scraped every second' : 'off'})\n${fsync}\n\n${table}\n`)

  mkdirSync(RESULTS, { recursive: true })
  const file = join(RESULTS, `bench-${date.replace(/[:.]/g, '-')}${options.quick ? '-quick' : ''}.json`)
  writeFileSync(file, `${JSON.stringify({ date, machine, command, fsyncMs, options: { ...options, only: [...options.only] }, results: rows }, null, 2)}\n`)
  process.stdout.write(`\nwritten to ${file}\n`)
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exit(1)
})
