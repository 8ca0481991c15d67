/**
 * `npm run bench`: drives the real, built server with autocannon and compares every workload with
 * two references measured in the same run: a bare Fastify route (the ceiling, bench/ceiling.ts)
 * and the Fastify + better-sqlite3 service a user would write instead (bench/minimal.ts). See
 * docs/performance.md.
 *
 *   npm run bench -- [--quick] [--duration 10] [--warmup 3] [--connections 32]
 *                    [--only read,list,create,delete] [--db sqlite] [--db postgres://...]
 *                    [--log-level warn] [--limits on|off] [--cpu-prof] [--metrics] [--webhook] [--jwt] [--pairs 1|3|5…]
 *
 * --metrics measures read and create again with METRICS_PORT set (issue 13: ≥ 0.95 of without);
 * --webhook measures create again with one active subscription delivering every event to a
 * loopback receiver (issue 12: ≥ 0.8 of without); --jwt measures read again with a JWT access
 * token of a real OpenID provider (oidc-provider, in this process) instead of an opaque token
 * (issue 32: what verifying a signature on every request costs). --pairs N measures plant-store without and
 * with each variant N times, alternating, and judges the variant by the median of the N pairs'
 * ratios: on a shared machine whose speed drifts by more than the effect, one pair is a coin toss.
 */
import type { ChildProcess } from 'node:child_process'
import { closeSync, fdatasyncSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import autocannon from 'autocannon'
import pg from 'pg'
import type { LogLevel } from '../src/config/load-config.js'
import { isPostgresUrl, parsePostgresUrl } from '../src/store/postgres/connection.js'
import type { SqliteSynchronous } from '../src/store/sqlite/sqlite-store.js'
import { AUDIENCE, signingKey, startProvider } from '../test/helpers/oidc-provider.js'
import { withSchema } from '../test/helpers/postgres.js'
import { startServer } from '../test/helpers/server-process.js'
import {
  CONNECTIONS, cpuSeconds, median, peakRssMb, roundOrder, SERVER_ENV, SERVER_NODE_FLAGS, startListening, UNREACHABLE
} from './measure.js'
import {
  backendCpu, backendCpuUsed, postgresQuery, RoundTripCounter, seedReference,
  withApplicationName
} from './postgres.js'
import { seed } from './seed.js'

type Sync = SqliteSynchronous
type WorkloadName = 'read' | 'list' | 'create' | 'delete'
/**
 * What answers: a bare Fastify route, the minimal service a user would write instead (SQLite, or
 * PostgreSQL), the idiomatic PostgreSQL peer (bench/peer-pg.ts), plant-store, or plant-store as
 * another build made it (--baseline: the release before a change, measured in the same rounds).
 */
type Server = 'ceiling' | 'minimal' | 'peer' | 'plant-store' | 'baseline'
type StoreKind = 'sqlite' | 'postgres'
/**
 * plant-store measured again with metrics on, with one webhook subscription receiving every event, or called with a
 * JWT.
 */
type Variant = 'metrics' | 'webhook' | 'jwt'

/** A store plant-store is measured on (`--db`, repeatable). */
interface StoreChoice {
  kind: StoreKind
  /** PostgreSQL: the server URL; every workload gets a fresh schema on it, dropped afterwards. */
  url?: string
  /**
   * PostgreSQL: the SQLite level its settings match (`full` with fsync and synchronous_commit on),
   * so its writes are set beside the SQLite rows of equal durability; and those settings.
   */
  sync?: Sync
  setting?: string
}

interface Options {
  duration: number
  warmup: number
  connections: number
  only: Set<WorkloadName>
  stores: StoreChoice[]
  logLevel: LogLevel
  /** Whether the rate limit and the per-connection request cap run (never reached either way). */
  limits: boolean
  cpuProf: boolean
  quick: boolean
  metrics: boolean
  webhook: boolean
  jwt: boolean
  /** Rounds of plant-store without and with the variants, alternating (--pairs). */
  pairs: number
  /** Interleaved rounds of the PostgreSQL peer, minimal service and plant-store (--rounds). */
  rounds: number
  /** The build directory (tsc's outDir) of another plant-store, measured beside this one on PostgreSQL. */
  baseline: string | undefined
}

interface Row {
  server: Server
  /** The store the server ran on; null for the ceiling. */
  store: StoreKind | null
  workload: WorkloadName | 'ceiling'
  /** plant-store with metrics on, or with a webhook subscription; null: as configured by default. */
  variant: Variant | null
  /** With --pairs above 1, the round (from 1) of plant-store without and with its variants; else null. */
  round: number | null
  sync: Sync | null
  /** PostgreSQL's durability settings, which decide `sync` for its writes. */
  syncSetting: string | null
  requestsPerSecond: number
  /** Seconds measured (autocannon's own count). */
  durationS: number
  /** Latency of the 2xx answers, from autocannon's per-response timings (sub-millisecond). */
  p50Ms: number
  p99Ms: number
  requests: number
  /** 2xx answers, measured and in the warm-up. */
  successes: number
  warmupSuccesses: number
  non2xx: number
  errors: number
  peakRssMb: number | null
  /** Server CPU time per request: steadier than req/s on a shared machine. */
  cpuUsPerRequest: number | null
  /** PostgreSQL rows: the CPU time of the backends that served the server, per request. */
  dbCpuUsPerRequest: number | null
  /** PostgreSQL rows: ReadyForQuery messages per request, counted apart (see RoundTripCounter). */
  roundTrips: number | null
  /** req/s ÷ the faster ceiling of the run. */
  ratioToCeiling: number | null
  /** req/s ÷ the minimal service's on the same workload and sync level. */
  ratioToMinimal: number | null
  /** p99 ÷ the minimal service's on the same workload and sync level. */
  p99ToMinimal: number | null
  /** PostgreSQL rows: req/s ÷ plant-store on SQLite on the same workload and sync level. */
  ratioToSqlite: number | null
  /** PostgreSQL plant-store rows: req/s, p99 and CPU (node and backends) ÷ the idiomatic peer's, same round. */
  ratioToPeer: number | null
  p99ToPeer: number | null
  cpuToPeer: number | null
  /** Variant rows: req/s ÷ the same plant-store without the variant. */
  ratioToPlain: number | null
  /** Variant rows: CPU µs per request ÷ the same plant-store's without the variant. */
  cpuToPlain: number | null
  /**
   * --webhook rows, once delivery caught up (or gave up): the 201s the load generator counted, the
   * deliveries the receiver had and the distinct webhook-ids among them (requests still in flight
   * when the warm-up and the run ended, up to twice the connections, commit and are delivered too).
   */
  deliveries: {
    created: number
    delivered: number
    distinct: number
    /** The TCP connections the receiver had the deliveries on. */
    connections: number
    byRunEnd: number
    catchUpS: number
    /**
     * Distinct events the receiver had per second after the run, from its first poll to its last: the idle server
     * draining its backlog.
     */
    drainPerS: number | null
    /**
     * Measured on the idle server before its load: LATENCY_CREATES creates, one at a time, from each 201 to its
     * delivery.
     */
    latency: { creates: number, p50Ms: number, p99Ms: number }
  } | null
}

/** What autocannon sends: one request shape, optionally rewritten per request. */
interface Traffic {
  method: 'GET' | 'POST' | 'DELETE'
  path: string
  body?: string
  /** Called for every request: returns the path to use (distinct ids, rotating cursors). */
  nextPath?: () => string
  /**
   * Deletes: how many requests the warm-up and the measurement send (each deletes a distinct
   * seeded plant), instead of running for a duration, so a run never asks for more plants than
   * were seeded, however fast the machine happens to be at that moment.
   */
  amount?: { warmup: number, measure: number }
}

/** An issue-14 target, read off the rows of the run; speed never fails the run. */
interface TargetCheck {
  target: string
  value: number
  holds: boolean
}

const HERE = dirname(fileURLToPath(import.meta.url))
const CEILING = join(HERE, 'ceiling.js')
const MINIMAL = join(HERE, 'minimal.js')
const MINIMAL_PG = join(HERE, 'minimal-pg.js')
const PEER_PG = join(HERE, 'peer-pg.js')
const RECEIVER = join(HERE, 'receiver.js')
const RESULTS = join(HERE, '..', '..', 'bench', 'results')
const WORKLOADS: readonly WorkloadName[] = ['read', 'list', 'create', 'delete']
const SEEDED_PLANTS = 10_000
const CREATE_BODY = '{"name":"Monstera","tag":"tropical"}'
/** Requests of each workload, one at a time, whose round trips to PostgreSQL are counted. */
const ROUND_TRIP_REQUESTS = 100
/** Creates of the --webhook rows' latency probe, on the idle server before its load. */
const LATENCY_CREATES = 100
const TOKEN = randomBytes(24).toString('base64url')

function parseOptions (): Options {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string', default: String(CONNECTIONS) },
      only: { type: 'string' },
      // `sqlite` (a fresh file per workload) or a postgres:// URL; repeat to measure both in one run.
      db: { type: 'string', multiple: true },
      // Request logging at info costs more than the rest of a read: see
      // docs/performance.md#what-the-measurements-decided.
      'log-level': { type: 'string', default: 'warn' },
      // `on`: the rate limit and the per-connection request cap run, with limits no run reaches.
      limits: { type: 'string', default: 'on' },
      'cpu-prof': { type: 'boolean', default: false },
      metrics: { type: 'boolean', default: false },
      webhook: { type: 'boolean', default: false },
      jwt: { type: 'boolean', default: false },
      pairs: { type: 'string', default: '1' },
      rounds: { type: 'string', default: '1' },
      baseline: { type: 'string' }
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
    if (!WORKLOADS.includes(name as WorkloadName)) {
      throw new Error(`--only: unknown workload ${name} (${WORKLOADS.join(', ')})`)
    }
  }
  const stores = (values.db ?? ['sqlite']).map((db): StoreChoice => {
    if (db === 'sqlite') return { kind: 'sqlite' }
    if (isPostgresUrl(db)) return { kind: 'postgres', url: db }
    throw new Error(`--db: "sqlite" or a postgres:// URL, not ${db}`)
  })
  if (new Set(stores.map((store) => store.kind)).size !== stores.length) {
    throw new Error('--db: each store at most once')
  }
  if (values.limits !== 'on' && values.limits !== 'off') throw new Error('--limits: on or off')
  const pairs = Number(values.pairs)
  // Odd, so that the median is one of the pairs, not the better of the middle two.
  if (!Number.isInteger(pairs) || pairs < 1 || pairs % 2 === 0) {
    throw new Error('--pairs must be an odd whole number (1, 3, 5, …)')
  }
  const rounds = Number(values.rounds)
  if (!Number.isInteger(rounds) || rounds < 1 || rounds % 2 === 0) {
    throw new Error('--rounds must be an odd whole number (1, 3, 5, …)')
  }
  return {
    quick: values.quick,
    duration: number(values.duration, values.quick ? 1 : 10, 'duration'),
    warmup: number(values.warmup, values.quick ? 0.5 : 3, 'warmup'),
    connections: number(values.connections, CONNECTIONS, 'connections'),
    only: new Set(only as WorkloadName[]),
    stores,
    logLevel: values['log-level'] as LogLevel,
    limits: values.limits === 'on',
    cpuProf: values['cpu-prof'],
    metrics: values.metrics,
    webhook: values.webhook,
    jwt: values.jwt,
    pairs,
    rounds,
    baseline: values.baseline
  }
}

/** A child process that answers HTTP at `url`: a reference service, or plant-store itself. */
class Child {
  /** PostgreSQL: the server URL and the application_name of the backends that serve this process. */
  database: { url: string, applicationName: string } | undefined

  private constructor (readonly process: ChildProcess, readonly url: string) {}

  /** plant-store, started as the tests start it; its output goes to `logFile`. */
  static async server (env: NodeJS.ProcessEnv, logFile: string, nodeArgs: string[], build?: string): Promise<Child> {
    const command = build === undefined
      ? undefined
      : {
          file: process.execPath,
          args: [...nodeArgs, join(build, 'src', 'main', 'server.js')],
          cwd: build
        }
    const server = await startServer(undefined, { env, logFile, nodeArgs, ...(command !== undefined && { command }) })
    return new Child(server.child, server.baseUrl)
  }

  /** A script that prints "... listening on http://host:port" once it is ready (the references). */
  static async start (script: string, env: NodeJS.ProcessEnv, logFile: string, nodeArgs: string[]): Promise<Child> {
    const { child, url } = await startListening(process.execPath, [...nodeArgs, script], env, logFile, 60_000)
    return new Child(child, url)
  }

  /** The CPU each of its PostgreSQL backends has used, by pid (empty without PostgreSQL). */
  async backendCpu (): Promise<Map<number, number>> {
    return this.database === undefined ? new Map() : await backendCpu(this.database.url, this.database.applicationName)
  }

  /** CPU time (user + system) the process has used, in seconds, or null where /proc is not there. */
  cpuSeconds (): number | null {
    return this.process.pid === undefined ? null : cpuSeconds(this.process.pid)
  }

  /** Peak resident memory (VmHWM) in MB, or null where /proc is not there. */
  peakRssMb (): number | null {
    return this.process.pid === undefined ? null : peakRssMb(this.process.pid)
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

/** One statement on a short-lived connection to the PostgreSQL server `url` names. */
const serverQuery = async (url: string, text: string): Promise<pg.QueryResultRow[]> =>
  await postgresQuery(parsePostgresUrl(url).connectionString, text)

/**
 * PostgreSQL's durability: with fsync and synchronous_commit on, an acknowledged commit survives a
 * power loss, as under SQLite's `full`; otherwise only a process crash, as under `normal`.
 */
async function postgresDurability (url: string): Promise<{ sync: Sync, setting: string }> {
  const [fsync] = await serverQuery(url, 'SHOW fsync')
  const [commit] = await serverQuery(url, 'SHOW synchronous_commit')
  const fsyncOn = fsync?.fsync === 'on'
  const synchronousCommit = String(commit?.synchronous_commit)
  return {
    sync: fsyncOn && synchronousCommit !== 'off' ? 'full' : 'normal',
    setting: `synchronous_commit=${synchronousCommit}${fsyncOn ? '' : ', fsync=off'}`
  }
}

interface Drive {
  result: autocannon.Result
  /** Every 2xx answer's latency in ms, as autocannon timed it (its own percentiles are whole ms). */
  latenciesMs: Float64Array
}

/**
 * Sends `traffic` for `seconds`, or `amount` requests (then for at most three times `seconds`: a
 * slower moment shortens the measurement rather than stretching the run).
 */
async function drive (url: string, traffic: Traffic, seconds: number, amount: number | undefined, connections: number,
  token: string | undefined): Promise<Drive> {
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` }
  if (traffic.body !== undefined) headers['content-type'] = 'application/json'
  const { nextPath } = traffic
  let latencies = new Float64Array(1 << 16)
  let count = 0
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({
      url,
      connections,
      ...(amount === undefined ? { duration: seconds } : { amount }),
      requests: [{
        method: traffic.method,
        path: traffic.path,
        headers,
        ...(traffic.body === undefined ? {} : { body: traffic.body }),
        ...(nextPath === undefined ? {} : { setupRequest: (request) => ({ ...request, path: nextPath() }) })
      }]
    }, (err, done) => {
      clearTimeout(deadline)
      if (err === null || err === undefined) resolve(done)
      else reject(err)
    })
    const deadline = setTimeout(() => { instance.stop() }, amount === undefined ? 2 ** 31 - 1 : seconds * 3000)
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode < 200 || statusCode > 299) return
      if (count === latencies.length) {
        const grown = new Float64Array(latencies.length * 2)
        grown.set(latencies)
        latencies = grown
      }
      latencies[count++] = responseTime
    })
  })
  return { result, latenciesMs: latencies.subarray(0, count).sort() }
}

/** The `fraction` percentile of sorted values (nearest rank), 0 when there are none. */
const percentile = (sorted: Float64Array, fraction: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? 0

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

const label = (row: Pick<Row, 'server' | 'store' | 'variant' | 'round'>): string =>
  `${row.server}${row.store === 'postgres' ? ' (pg)' : ''}${row.variant === null ? '' : ` +${row.variant}`}` +
  (row.round === null ? '' : ` #${row.round}`)

async function main (): Promise<void> {
  const options = parseOptions()
  const work = mkdtempSync(join(tmpdir(), 'plant-store-bench-'))
  const profiles = join(RESULTS, 'profiles')
  const rows: Row[] = []
  const fsyncMs: number[] = []
  const schemas: Array<{ url: string, schema: string }> = []
  const runId = randomBytes(4).toString('hex')

  for (const store of options.stores) {
    if (store.kind === 'postgres' && store.url !== undefined) Object.assign(store, await postgresDurability(store.url))
  }

  // --jwt: a real OpenID provider on loopback, started once; each measurement gets a fresh token (they live 5 minutes).
  const provider = options.jwt ? await startProvider([await signingKey('bench-key')]) : undefined
  const jwtToken = async (): Promise<string> => {
    if (provider === undefined) throw new Error('a JWT row without --jwt')
    return await provider.token('reader')
  }

  const profileArgs = (name: string): string[] =>
    options.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`, `--cpu-prof-name=${name}.cpuprofile`] : []

  const measure = async (child: Child,
    row: Pick<Row, 'server' | 'store' | 'workload' | 'variant' | 'round' | 'sync' | 'syncSetting'>,
    traffic: Traffic): Promise<Row> => {
    const token = row.server === 'peer' ||
      row.server === 'baseline'
      ? TOKEN
      : row.server !== 'plant-store'
        ? undefined
        : row.variant === 'jwt'
          ? await jwtToken()
          : TOKEN
    const warmup = await drive(child.url, traffic, options.warmup, traffic.amount?.warmup, options.connections, token)
    const dbBefore = await child.backendCpu()
    const cpuBefore = child.cpuSeconds()
    const { result, latenciesMs } = await drive(child.url, traffic, options.duration, traffic.amount?.measure,
      options.connections, token)
    const cpuAfter = child.cpuSeconds()
    const dbAfter = await child.backendCpu()
    const requestsPerSecond = result.requests.total / result.duration
    const measured: Row = {
      ...row,
      requestsPerSecond,
      durationS: result.duration,
      p50Ms: percentile(latenciesMs, 0.5),
      p99Ms: percentile(latenciesMs, 0.99),
      requests: result.requests.total,
      successes: result['2xx'],
      warmupSuccesses: warmup.result['2xx'],
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
      peakRssMb: child.peakRssMb(),
      cpuUsPerRequest: cpuBefore === null || cpuAfter === null || result.requests.total === 0
        ? null
        : (cpuAfter - cpuBefore) * 1e6 / result.requests.total,
      dbCpuUsPerRequest: child.database === undefined || result.requests.total === 0
        ? null
        : backendCpuUsed(dbBefore, dbAfter) * 1e6 / result.requests.total,
      roundTrips: null,
      ratioToPeer: null,
      p99ToPeer: null,
      cpuToPeer: null,
      ratioToCeiling: null,
      ratioToMinimal: null,
      p99ToMinimal: null,
      ratioToSqlite: null,
      ratioToPlain: null,
      cpuToPlain: null,
      deliveries: null
    }
    rows.push(measured)
    process.stderr.write(`  ${row.workload}${row.sync === null ? '' : ` (${row.sync})`} ${label(row)}: ` +
      `${Math.round(requestsPerSecond)} req/s, ${measured.cpuUsPerRequest?.toFixed(0) ?? 'n/a'} µs CPU/req` +
      (measured.dbCpuUsPerRequest === null ? '' : ` + ${measured.dbCpuUsPerRequest.toFixed(0)} µs of PostgreSQL's`) +
      ` over ${result.duration} s\n`)
    return measured
  }

  // Measured first and last: the machine is shared, so ratios use the faster of both.
  const measureCeiling = async (): Promise<void> => {
    const ceiling = await Child.start(CEILING, process.env, join(work, 'ceiling.log'), [])
    try {
      await measure(ceiling,
        {
          server: 'ceiling',
          store: null,
          workload: 'ceiling',
          variant: null,
          round: null,
          sync: null,
          syncSetting: null
        }, { method: 'GET', path: '/' })
    } finally {
      await ceiling.stop()
    }
  }

  /**
   * How many deletes the warm-up and the measurement send, each deleting a distinct seeded plant:
   * what the same server would do in that time at 1.3 times the rate it created at (deletes run a
   * little faster than creates), or, without a create measured, at its own fastest rate so far (the
   * ceiling's before any). Seed `warmup + measure + margin` plants.
   */
  const deleteBudget = (server: Server, store: StoreKind,
    sync: Sync): { warmup: number, measure: number, seed: number } => {
    const mine = rows.filter((row) => row.server === server && row.store === store && row.variant === null)
    const created = mine.filter((row) => row.workload === 'create' && row.sync === sync)
    const rate = created.length === 0
      ? Math.max(
        ...(mine.length > 0 ? mine : rows.filter((row) => row.server === 'ceiling')).map(
          (row) => row.requestsPerSecond))
      : 1.3 * Math.max(...created.map((row) => row.requestsPerSecond))
    const warmup = Math.max(options.connections, Math.ceil(rate * options.warmup))
    const measure = Math.max(options.connections, Math.ceil(rate * options.duration))
    // autocannon may build one request per connection more than it sends.
    return { warmup, measure, seed: warmup + measure + 2 * options.connections }
  }

  /** The minimal service on a fresh SQLite file with `plants` plants (ids 1..plants). */
  const minimal = async (name: string, sync: Sync, plants: number): Promise<Child> =>
    await Child.start(MINIMAL, {
      ...process.env,
      ...SERVER_ENV,
      MINIMAL_DATABASE: join(work, `minimal-${name}.db`),
      MINIMAL_SYNCHRONOUS: sync,
      MINIMAL_SEED: String(plants)
    }, join(work, `minimal-${name}.log`), [...SERVER_NODE_FLAGS, ...profileArgs(`minimal-${name}`)])

  /**
   * plant-store on a fresh database of `store` seeded with `plants` plants; with metrics on, or with
   * one subscription delivering to `receiverUrl`.
   */
  const service = async (store: StoreChoice, name: string, sync: Sync, plants: number, variant: Variant | null = null,
    receiverUrl?: string,
    through?: RoundTripCounter, build?: string): Promise<{ child: Child, ids: bigint[] }> => {
    let databaseUrl = join(work, `${name}.db`)
    let serverUrl = databaseUrl
    const applicationName = `plant_store_bench_${runId}_${name.replace(/-/g, '_')}`
    if (store.kind === 'postgres' && store.url !== undefined) {
      schemas.push({ url: store.url, schema: applicationName })
      databaseUrl = withSchema(store.url, applicationName)
      serverUrl = withApplicationName(through?.url(databaseUrl) ?? databaseUrl, applicationName)
    }
    const ids = await seed(databaseUrl, TOKEN, plants, variant === 'webhook' ? receiverUrl : undefined)
    const child = await Child.server({
      ...process.env,
      ...SERVER_ENV,
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: serverUrl,
      API_TOKENS: TOKEN,
      SQLITE_SYNCHRONOUS: sync,
      LOG_LEVEL: options.logLevel,
      // The abuse limits would stop one benchmark client that sends everything with one token
      // (1000 requests a minute, 1000 requests a connection by default). They run, as they do in
      // production, at limits no run reaches (--limits off: not at all).
      RATE_LIMIT_MAX: options.limits ? String(UNREACHABLE) : '0',
      MAX_REQUESTS_PER_SOCKET: options.limits ? String(UNREACHABLE) : '0',
      // Load shedding as configured, as in production (the test servers have it off).
      MAX_EVENT_LOOP_DELAY_MS: process.env.MAX_EVENT_LOOP_DELAY_MS,
      ...(variant === 'metrics' && { METRICS_PORT: '0' }),
      ...(variant === 'jwt' && provider !== undefined && { OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: AUDIENCE }),
      // The receiver is on loopback; every other WEBHOOK_* setting is the default.
      ...(variant === 'webhook' && { WEBHOOK_ALLOW_PRIVATE_URLS: '1' })
    }, join(work, `${name}.log`), [...SERVER_NODE_FLAGS, ...profileArgs(name)], build)
    if (store.kind === 'postgres' && store.url !== undefined) {
      child.database = { url: parsePostgresUrl(store.url).connectionString, applicationName }
    }
    return { child, ids }
  }

  /**
   * A PostgreSQL reference (the idiomatic peer or the minimal service) on a fresh schema of `url`
   * seeded with `plants` plants (ids 1..plants); `through`: a round-trip counter in front of PostgreSQL.
   */
  const reference = async (server: 'peer' | 'minimal', url: string, name: string, plants: number,
    through?: RoundTripCounter): Promise<Child> => {
    const schema = `plant_store_bench_${runId}_${name.replace(/-/g, '_')}`
    const connection = parsePostgresUrl(url).connectionString
    schemas.push({ url, schema })
    await seedReference(connection, schema, plants)
    const serverUrl = withApplicationName(through?.url(connection) ?? connection, schema)
    const env = server === 'peer'
      ? { PEER_DATABASE_URL: serverUrl, PEER_SCHEMA: schema, PEER_TOKEN: TOKEN }
      : { MINIMAL_DATABASE_URL: serverUrl, MINIMAL_SCHEMA: schema }
    const child = await Child.start(server === 'peer' ? PEER_PG : MINIMAL_PG, { ...process.env, ...SERVER_ENV, ...env },
      join(work, `${name}.log`), [...SERVER_NODE_FLAGS, ...profileArgs(name)])
    child.database = { url: connection, applicationName: schema }
    return child
  }

  const readTraffic = (ids: ReadonlyArray<bigint | number>): Traffic =>
    ({ method: 'GET', path: '/plants/1', nextPath: rotate(ids.map((id) => `/plants/${id}`), false).next })
  // Cursors from the second half of the table: deep pages, each a different one.
  const listTraffic = (ids: ReadonlyArray<bigint | number>): Traffic =>
    ({
      method: 'GET',
      path: '/plants?limit=20',
      nextPath: rotate(ids.slice(ids.length / 2, -20).map((id) => `/plants?limit=20&after=${id}`), false).next
    })
  const oneTo = (count: number): number[] => Array.from({ length: count }, (_, i) => i + 1)

  /** What a workload sends over the seeded `ids`; `exhausted` tells whether deletes ran out of them. */
  const workloadTraffic = (workload: WorkloadName, ids: ReadonlyArray<bigint | number>,
    budget: Traffic['amount']): { traffic: Traffic, exhausted: () => boolean } => {
    const deletes = rotate(ids.map((id) => `/plants/${id}`), true)
    const traffic: Traffic = workload === 'read'
      ? readTraffic(ids)
      : workload === 'list'
        ? listTraffic(ids)
        : workload === 'create'
          ? { method: 'POST', path: '/plants', body: CREATE_BODY }
          : {
              method: 'DELETE',
              path: '/plants/1',
              nextPath: deletes.next,
              ...(budget !== undefined && { amount: budget })
            }
    return { traffic, exhausted: deletes.exhausted }
  }

  /** One workload on the minimal service, then on plant-store on each store of `stores`. */
  const run = async (workload: WorkloadName, sync: Sync, stores: readonly StoreChoice[]): Promise<void> => {
    const name = `${workload}-${sync}`
    const rowSync = workload === 'read' || workload === 'list' ? null : sync
    if (stores.some((store) => store.kind === 'sqlite')) {
      const budget = deleteBudget('minimal', 'sqlite', sync)
      const plants = workload === 'delete' ? budget.seed : SEEDED_PLANTS
      const child = await minimal(name, sync, plants)
      try {
        const { traffic, exhausted } = workloadTraffic(workload, oneTo(plants), budget)
        await measure(child,
          {
            server: 'minimal',
            store: 'sqlite',
            workload,
            variant: null,
            round: null,
            sync: rowSync,
            syncSetting: null
          }, traffic)
        if (exhausted()) throw new Error(`the minimal ${name} workload ran out of seeded plants`)
      } finally {
        await child.stop()
      }
    }
    const variants: Variant[] = [
      ...(options.metrics && (workload === 'read' || workload === 'create') ? ['metrics' as const] : []),
      ...(options.webhook && workload === 'create' ? ['webhook' as const] : []),
      ...(options.jwt && workload === 'read' ? ['jwt' as const] : [])
    ]
    // Without a variant to compare there is nothing to pair: one round.
    const rounds = variants.length === 0 ? 1 : options.pairs
    for (const store of stores) {
      if (store.kind === 'postgres' && workload !== 'list') {
        await runPostgresRounds(workload, sync, store, variants)
        continue
      }
      for (let round = 1; round <= rounds; round++) {
        const numbered = rounds === 1 ? null : round
        await runPlantStore(workload, sync, store, null, numbered, false)
        for (const variant of variants) await runPlantStore(workload, sync, store, variant, numbered, round === rounds)
      }
    }
  }

  /**
   * A workload on PostgreSQL: --rounds rounds of the idiomatic peer, the minimal service and
   * plant-store (with its variants, as --pairs would run them), interleaved, each on a fresh schema;
   * each round starts one server later (roundOrder), so none is always measured first or last.
   */
  const runPostgresRounds = async (workload: WorkloadName, sync: Sync, store: StoreChoice,
    variants: readonly Variant[]): Promise<void> => {
    const rowSync = workload === 'read' ? null : sync
    const rounds = Math.max(options.rounds, variants.length === 0 ? 1 : options.pairs)
    for (let round = 1; round <= rounds; round++) {
      const numbered = rounds === 1 ? null : round
      const runReference = async (server: 'peer' | 'minimal'): Promise<void> => {
        const budget = deleteBudget(server, 'postgres', sync)
        const plants = workload === 'delete' ? budget.seed : SEEDED_PLANTS
        const name = `${workload}-${sync}-${server}-pg${numbered === null ? '' : `-${numbered}`}`
        const child = await reference(server, store.url as string, name, plants)
        try {
          const { traffic, exhausted } = workloadTraffic(workload, oneTo(plants), budget)
          await measure(child,
            {
              server,
              store: 'postgres',
              workload,
              variant: null,
              round: numbered,
              sync: rowSync,
              syncSetting: store.setting ?? null
            }, traffic)
          if (exhausted()) throw new Error(`the ${name} workload ran out of seeded plants`)
        } finally {
          await child.stop()
        }
      }
      // A build's variants follow its own run without them: each variant row pairs with the run just before it.
      const runBuild = async (server: 'plant-store' | 'baseline'): Promise<void> => {
        await runPlantStore(workload, sync, store, null, numbered, false, server)
        for (const variant of variants) {
          await runPlantStore(workload, sync, store, variant, numbered, round === rounds, server)
        }
      }
      const servers: Array<() => Promise<void>> = [
        async () => { await runReference('peer') },
        async () => { await runReference('minimal') },
        ...(options.baseline === undefined ? [] : [async () => { await runBuild('baseline') }]),
        async () => { await runBuild('plant-store') }
      ]
      for (const server of roundOrder(servers, round)) await server()
    }
  }

  /**
   * Round trips to PostgreSQL per request of each server and workload, counted apart from the
   * timed runs (a proxy would slow them): ROUND_TRIP_REQUESTS requests one at a time through a
   * RoundTripCounter, on the connections that were quiet while the server idled (not its webhook
   * dispatcher's, which poll).
   */
  const countRoundTrips = async (store: StoreChoice): Promise<void> => {
    const counter = await RoundTripCounter.start(store.url as string)
    const workloads = (['read', 'create', 'delete'] as const).filter((workload) => options.only.has(workload))
    try {
      for (const server of ['peer', 'minimal', ...(options.baseline === undefined ? [] : ['baseline' as const]),
        'plant-store'] as const) {
        const plants = 2 * ROUND_TRIP_REQUESTS
        const name = `round-trips-${server}`
        const { child, ids } = server === 'plant-store' || server === 'baseline'
          ? await service(store, name, 'full', plants, null, undefined, counter,
            server === 'baseline' ? options.baseline : undefined)
          : { child: await reference(server, store.url as string, `${name}-pg`, plants, counter), ids: oneTo(plants) }
        try {
          const token = server === 'minimal' ? undefined : TOKEN
          // What a server exchanges right after its start is not its idle state.
          await sleep(1000)
          const idle = counter.snapshot()
          await sleep(2000)
          const background = RoundTripCounter.busy(idle, counter.snapshot())
          for (const workload of workloads) {
            const paths = workload === 'delete' ? ids.slice(ROUND_TRIP_REQUESTS) : ids
            const before = counter.snapshot()
            for (let i = 0; i < ROUND_TRIP_REQUESTS; i++) {
              const response =
                await fetch(`${child.url}${workload === 'create' ? '/plants' : `/plants/${paths[i] ?? 0}`}`, {
                  method: workload === 'read' ? 'GET' : workload === 'create' ? 'POST' : 'DELETE',
                  headers: {
                    ...(token !== undefined && { authorization: `Bearer ${token}` }),
                    ...(workload === 'create' && { 'content-type': 'application/json' })
                  },
                  ...(workload === 'create' && { body: CREATE_BODY })
                })
              await response.arrayBuffer()
              if (response.status < 200 || response.status > 299) {
                throw new Error(`${name} ${workload}: ${response.status}`)
              }
            }
            const exchanged = RoundTripCounter.exchanged(background, before, counter.snapshot())
            for (const row of rows) {
              if (row.server === server && row.store === 'postgres' && row.workload === workload) {
                row.roundTrips = exchanged / ROUND_TRIP_REQUESTS
              }
            }
          }
        } finally {
          await child.stop()
        }
      }
    } finally {
      await counter.stop()
    }
  }

  /**
   * One workload on plant-store on `store`, as configured by default or with a variant, in round
   * `round` of --pairs (null: the only one). `lastRound`: a webhook variant's delivery latency and
   * catch-up are measured (once, in the last round: each waits up to a minute).
   */
  const runPlantStore = async (workload: WorkloadName, sync: Sync, store: StoreChoice, variant: Variant | null,
    round: number | null, lastRound: boolean,
    server: 'plant-store' | 'baseline' = 'plant-store'): Promise<void> => {
    const rowSync = workload === 'read' || workload === 'list' ? null : sync
    const storeName =
      `${workload}-${sync}${store.kind === 'postgres' ? '-pg' : ''}${server === 'baseline' ? '-baseline' : ''}` +
      `${variant === null ? '' : `-${variant}`}${round === null ? '' : `-${round}`}`
    const budget = deleteBudget(server, store.kind, sync)
    const plants = workload === 'delete' ? budget.seed : SEEDED_PLANTS
    const receiver = variant === 'webhook'
      ? await Child.start(RECEIVER, process.env,
        join(work, `${storeName}-receiver.log`), [])
      : undefined
    try {
      const { child, ids } = await service(store, storeName, sync, plants, variant,
        receiver === undefined ? undefined : `${receiver.url}/hooks`,
        undefined, server === 'baseline' ? options.baseline : undefined)
      try {
        const { traffic, exhausted } = workloadTraffic(workload, ids, budget)
        const latency = receiver === undefined || !lastRound ? undefined : await deliveryLatency(child, receiver)
        const row = await measure(child,
          { server, store: store.kind, workload, variant, round, sync: rowSync, syncSetting: store.setting ?? null },
          traffic)
        if (exhausted()) throw new Error(`the ${storeName} workload ran out of seeded plants`)
        // Every 201 of the latency probe, the warm-up and the measurement wrote one event.
        if (receiver !== undefined && latency !== undefined) {
          row.deliveries = {
            ...await catchUp(receiver, LATENCY_CREATES + row.successes + row.warmupSuccesses),
            latency
          }
        }
      } finally {
        await child.stop()
      }
    } finally {
      await receiver?.stop()
    }
  }

  /**
   * The delivery latency of an idle plant-store: LATENCY_CREATES creates, one at a time and 20 ms
   * apart, each timed from its 201 to the receiver's arrival time of its event (both
   * `performance.timeOrigin + performance.now()`, comparable across the two processes).
   */
  const deliveryLatency = async (child: Child, receiver: Child): Promise<NonNullable<Row['deliveries']>['latency']> => {
    const latencies: number[] = []
    // A start-up slow enough on a loaded machine sheds load (503) for the first sample: wait it out.
    for (const until = performance.now() + 10_000; performance.now() < until;) {
      const health = await fetch(`${child.url}/health`)
      await health.arrayBuffer()
      if (health.status !== 503) break
      await sleep(100)
    }
    for (let i = 0; i < LATENCY_CREATES; i++) {
      const response = await fetch(`${child.url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: CREATE_BODY
      })
      const answered = performance.timeOrigin + performance.now()
      const text = await response.text()
      const id = /"id":(\d+)/.exec(text)?.[1]
      if (response.status !== 201 || id === undefined) {
        throw new Error(`the latency probe's create ${i + 1} answered ${response.status}: ${text}`)
      }
      for (;;) {
        const arrival = await fetch(`${receiver.url}/arrival?plant=${id}`)
        if (arrival.status === 200) {
          latencies.push(((await arrival.json()) as { at: number }).at - answered)
          break
        }
        await arrival.arrayBuffer()
        if (performance.timeOrigin + performance.now() - answered > 10_000) {
          throw new Error(`plant ${id}'s event did not arrive within 10 s`)
        }
        await sleep(1)
      }
      await sleep(20)
    }
    const sorted = Float64Array.from(latencies).sort()
    return { creates: LATENCY_CREATES, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99) }
  }

  /**
   * Waits (up to 60 s) until the receiver has had `created` distinct events; what it had, and how long that took after
   * the run.
   */
  const catchUp = async (receiver: Child,
    created: number): Promise<Omit<NonNullable<Row['deliveries']>, 'latency'>> => {
    const started = performance.now()
    let count = { received: 0, distinct: 0, connections: 0 }
    let byRunEnd: number | undefined
    let polled = started
    while (performance.now() - started < 60_000) {
      count = (await (await fetch(`${receiver.url}/count`)).json()) as typeof count
      polled = performance.now()
      // What was delivered while the load ran (deliveries yield to a busy API: see the dispatcher).
      byRunEnd ??= count.distinct
      if (count.distinct >= created) break
      await sleep(100)
    }
    const drainS = (polled - started) / 1000
    const drainPerS = drainS > 0.5 ? (count.distinct - (byRunEnd ?? 0)) / drainS : null
    return {
      created,
      delivered: count.received,
      distinct: count.distinct,
      connections: count.connections,
      byRunEnd: byRunEnd ?? 0,
      catchUpS: (performance.now() - started) / 1000,
      drainPerS
    }
  }

  try {
    const pool = process.env.PG_POOL_MAX ?? '10'
    process.stderr.write(`plant-store bench: ${options.duration}s per workload after ${options.warmup}s warm-up, ` +
      `${options.connections} connections, LOG_LEVEL=${options.logLevel}, limits ${options.limits ? 'on' : 'off'}, ` +
      `stores: ${options.stores.map((store) =>
        store.kind === 'postgres' ? `postgres (${store.setting ?? ''}, PG_POOL_MAX=${pool})` : 'sqlite').join(', ')}\n`)
    if (options.cpuProf) mkdirSync(profiles, { recursive: true })
    fsyncMs.push(fsyncLatencyMs(work))

    await measureCeiling()
    // Reads do not depend on the sync level: measured at the default, `full`.
    for (const workload of ['read', 'list'] as const) {
      if (options.only.has(workload)) await run(workload, 'full', options.stores)
    }
    for (const sync of ['normal', 'full'] as const) {
      // PostgreSQL's writes are measured once, beside the SQLite level of equal durability.
      const stores = options.stores.filter((store) => store.kind === 'sqlite' || store.sync === sync)
      for (const workload of ['create', 'delete'] as const) {
        if (options.only.has(workload)) await run(workload, sync, stores)
      }
    }
    await measureCeiling()
    fsyncMs.push(fsyncLatencyMs(work))
    for (const store of options.stores) {
      if (store.kind === 'postgres') await countRoundTrips(store)
    }
  } finally {
    await provider?.stop()
    rmSync(work, { recursive: true, force: true })
    for (const { url, schema } of schemas) await serverQuery(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  }

  compare(rows)
  const targets = checkTargets(rows, options)
  report(rows, targets, options, fsyncMs)

  // Speed is never a failure; a broken run is (no traffic, errors, or answers other than 2xx).
  const broken = rows.filter((row) => row.requests === 0 || row.errors > 0 || row.non2xx > 0)
  if (broken.length > 0) {
    const runs = broken.map((row) => `${row.workload}${row.sync === null ? '' : ` (${row.sync})`} ${label(row)}`)
    throw new Error(`invalid run: ${runs.join(', ')} had no traffic, errors or non-2xx answers`)
  }
}

/** Fills in every row's ratios to the references measured in the same run. */
function compare (rows: Row[]): void {
  // The faster of the two ceilings, so a noisy moment never flatters the ratios with a slow ceiling.
  const ceiling = Math.max(...rows.filter((row) => row.server === 'ceiling').map((row) => row.requestsPerSecond))
  for (const row of rows) {
    row.ratioToCeiling = row.requestsPerSecond / ceiling
    const same = (other: Row): boolean => other.workload === row.workload && other.sync === row.sync
    // PostgreSQL rows: the references of the same round (--rounds).
    const reference = (server: Server): Row | undefined => rows.find((other) => other.server === server &&
      other.store === row.store && same(other) &&
      (row.store !== 'postgres' || other.round === row.round))
    const minimal = reference('minimal')
    const peer = row.store === 'postgres' ? reference('peer') : undefined
    if (row.variant !== null) {
      // The run without the variant of the same round (--pairs): measured just before it.
      const plain = rows.find(
        (other) => other.server === row.server && other.store === row.store && other.variant === null &&
          other.round === row.round && same(other))
      if (plain !== undefined) {
        row.ratioToPlain = row.requestsPerSecond / plain.requestsPerSecond
        row.cpuToPlain = row.cpuUsPerRequest === null ||
          plain.cpuUsPerRequest === null
          ? null
          : row.cpuUsPerRequest / plain.cpuUsPerRequest
      }
      continue
    }
    if ((row.server === 'plant-store' || row.server === 'peer') && minimal !== undefined) {
      row.ratioToMinimal = row.requestsPerSecond / minimal.requestsPerSecond
      row.p99ToMinimal = minimal.p99Ms > 0 ? row.p99Ms / minimal.p99Ms : null
    }
    if ((row.server === 'plant-store' || row.server === 'baseline') && peer !== undefined) {
      row.ratioToPeer = row.requestsPerSecond / peer.requestsPerSecond
      row.p99ToPeer = peer.p99Ms > 0 ? row.p99Ms / peer.p99Ms : null
      const total = (of: Row): number | null =>
        of.cpuUsPerRequest === null || of.dbCpuUsPerRequest === null ? null : of.cpuUsPerRequest + of.dbCpuUsPerRequest
      const mine = total(row)
      const theirs = total(peer)
      row.cpuToPeer = mine === null || theirs === null || theirs === 0 ? null : mine / theirs
    }
    const sqlites = rows.filter(
      (other) => other.server === 'plant-store' && other.store === 'sqlite' && other.variant === null && same(other))
    // The same round, or SQLite's only one (--rounds numbers PostgreSQL's alone).
    const sqlite = sqlites.find((other) => other.round === row.round) ?? sqlites.find((other) => other.round === null)
    if (row.server === 'plant-store' && row.store === 'postgres' && sqlite !== undefined) {
      row.ratioToSqlite = row.requestsPerSecond / sqlite.requestsPerSecond
    }
  }
}

/** Issue 14's targets, as far as this run measured them (ratios within the run). */
function checkTargets (rows: Row[], options: Options): TargetCheck[] {
  const checks: TargetCheck[] = []
  /** plant-store's rows of one workload: one, or with --pairs one per round. */
  const ofRows = (store: StoreKind, workload: WorkloadName, sync: Sync | null, variant: Variant | null = null): Row[] =>
    rows.filter(
      (row) => row.server === 'plant-store' && row.store === store && row.workload === workload && row.sync === sync &&
        row.variant === variant)
  /** A ratio of those rows: with --pairs, the median of the rounds'. */
  const ratio = (of: Row[], pick: (row: Row) => number | null): number | null => {
    const values = of.map(pick).filter((value): value is number => value !== null)
    return values.length === 0 ? null : median(values)
  }
  const atLeast = (target: string, value: number | null | undefined, goal: number): void => {
    if (value !== null && value !== undefined) checks.push({ target, value, holds: value >= goal })
  }
  const atMost = (target: string, value: number | null | undefined, goal: number): void => {
    if (value !== null && value !== undefined) checks.push({ target, value, holds: value <= goal })
  }
  const read = ofRows('sqlite', 'read', null)
  const list = ofRows('sqlite', 'list', null)
  atLeast('read ≥ 0.55 × ceiling', ratio(read, (row) => row.ratioToCeiling), 0.55)
  atLeast('read ≥ 0.85 × minimal', ratio(read, (row) => row.ratioToMinimal), 0.85)
  atMost('read p99 ≤ 1.5 × minimal\'s', ratio(read, (row) => row.p99ToMinimal), 1.5)
  atLeast('list ≥ 0.30 × ceiling', ratio(list, (row) => row.ratioToCeiling), 0.30)
  atLeast('list ≥ 0.85 × minimal', ratio(list, (row) => row.ratioToMinimal), 0.85)
  for (const workload of ['create', 'delete'] as const) {
    atLeast(`${workload} (normal) ≥ 1.2 × minimal`,
      ratio(ofRows('sqlite', workload, 'normal'), (row) => row.ratioToMinimal), 1.2)
    atLeast(`${workload} (full) ≥ 4 × minimal`, ratio(ofRows('sqlite', workload, 'full'), (row) => row.ratioToMinimal),
      4)
  }
  atLeast('PostgreSQL read ≥ 0.4 × SQLite', ratio(ofRows('postgres', 'read', null), (row) => row.ratioToSqlite), 0.4)
  const pgCreate = rows.find(
    (row) => row.server === 'plant-store' && row.store === 'postgres' && row.workload === 'create')
  atLeast(`PostgreSQL create ≥ 0.3 × SQLite (${pgCreate?.sync ?? ''})`,
    ratio(ofRows('postgres', 'create', pgCreate?.sync ?? null), (row) => row.ratioToSqlite), 0.3)
  // Issue 13: what metrics cost; issue 12: what one subscription receiving every event costs.
  const paired = options.pairs === 1 ? '' : `, median of ${options.pairs} pairs`
  atLeast(`read with metrics ≥ 0.95 × without (issue 13${paired})`,
    ratio(ofRows('sqlite', 'read', null, 'metrics'), (row) => row.ratioToPlain), 0.95)
  for (const sync of ['normal', 'full'] as const) {
    atLeast(`create (${sync}) with metrics ≥ 0.95 × without (issue 13${paired})`,
      ratio(ofRows('sqlite', 'create', sync, 'metrics'), (row) => row.ratioToPlain), 0.95)
    atLeast(`create (${sync}) with a webhook ≥ 0.8 × without (issue 12${paired})`,
      ratio(ofRows('sqlite', 'create', sync, 'webhook'), (row) => row.ratioToPlain), 0.8)
  }
  // Issue 53: PostgreSQL against the idiomatic peer, medians of the interleaved rounds.
  const rounds = options.rounds === 1 ? '' : `, median of ${options.rounds} rounds`
  const pgRead = ofRows('postgres', 'read', null)
  atLeast(`PostgreSQL read ≥ 1.0 × peer (issue 53${rounds})`, ratio(pgRead, (row) => row.ratioToPeer), 1)
  atMost(`PostgreSQL read p99 ≤ 1.0 × peer's (issue 53${rounds})`, ratio(pgRead, (row) => row.p99ToPeer), 1)
  for (const workload of ['create', 'delete'] as const) {
    const written = rows.find(
      (row) => row.server === 'plant-store' && row.store === 'postgres' && row.workload === workload)
    const of = ofRows('postgres', workload, written?.sync ?? null)
    atLeast(`PostgreSQL ${workload} ≥ 1.0 × peer (issue 53${rounds})`, ratio(of, (row) => row.ratioToPeer), 1)
    atMost(`PostgreSQL ${workload} CPU ≤ 1.5 × peer's, node + backends (issue 53${rounds})`,
      ratio(of, (row) => row.cpuToPeer), 1.5)
  }
  const pgWebhook = rows.filter((row) => row.store === 'postgres' && row.variant === 'webhook')
  atLeast(`PostgreSQL create (${pgWebhook[0]?.sync ?? ''}) with a webhook ≥ 0.8 × without (issue 12${paired})`,
    ratio(pgWebhook, (row) => row.ratioToPlain), 0.8)
  const rss = rows.filter((row) => row.server === 'plant-store' && row.peakRssMb !== null).map(
    (row) => row.peakRssMb as number)
  if (rss.length > 0) atMost('peak RSS ≤ 120 MB (every plant-store workload)', Math.max(...rss), 120)
  return checks
}

const fixed = (value: number | null, digits: number): string => (value === null ? '' : value.toFixed(digits))

/** A Markdown table, columns padded to their widest cell. */
function table (header: string[], lines: string[][]): string {
  const widths = header.map(
    (title, column) => Math.max(title.length, ...lines.map((line) => (line[column] ?? '').length)))
  const format = (cells: string[]): string =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(' | ')} |`
  return [format(header), `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`, ...lines.map(format)].join(
    '\n')
}

function report (rows: Row[], targets: TargetCheck[], options: Options, fsyncMs: number[]): void {
  const withPostgres = rows.some((row) => row.store === 'postgres')
  const withVariants = rows.some((row) => row.variant !== null)
  const header = ['workload', 'sync', 'server', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'peak RSS MB',
    'CPU µs/req',
    ...(withPostgres ? ['PG CPU µs/req', 'round trips'] : []),
    '× ceiling', '× minimal', 'p99 × minimal',
    ...(withPostgres ? ['× SQLite', '× peer', 'p99 × peer', 'CPU × peer'] : []),
    ...(withVariants ? ['× without', 'CPU × without'] : [])]
  const lines = rows.map((row) => [
    row.workload,
    row.sync ?? '',
    label(row),
    String(Math.round(row.requestsPerSecond)),
    row.p50Ms.toFixed(2),
    row.p99Ms.toFixed(2),
    String(row.non2xx),
    String(row.errors),
    row.peakRssMb === null ? 'n/a' : row.peakRssMb.toFixed(1),
    row.cpuUsPerRequest === null ? 'n/a' : row.cpuUsPerRequest.toFixed(0),
    ...(withPostgres ? [fixed(row.dbCpuUsPerRequest, 0), fixed(row.roundTrips, 2)] : []),
    fixed(row.ratioToCeiling, 2),
    fixed(row.ratioToMinimal, 2),
    fixed(row.p99ToMinimal, 2),
    ...(withPostgres
      ? [fixed(row.ratioToSqlite, 2), fixed(row.ratioToPeer, 2), fixed(row.p99ToPeer, 2),
          fixed(row.cpuToPeer, 2)]
      : []),
    ...(withVariants ? [fixed(row.ratioToPlain, 2), fixed(row.cpuToPlain, 2)] : [])
  ])
  const deliveries = rows.filter((row) => row.deliveries !== null).map((row) => {
    const {
      created, delivered, distinct, connections, byRunEnd, catchUpS, drainPerS,
      latency
    } = row.deliveries as NonNullable<Row['deliveries']>
    return `webhook delivery latency, create (${row.sync ?? ''}) ${label(row)}, idle, ${latency.creates} ` +
      'creates one at a time: ' +
      `p50 ${latency.p50Ms.toFixed(2)} ms, p99 ${latency.p99Ms.toFixed(2)} ms from the 201 to the receiver\n` +
      'webhook ' +
        `deliveries, create (${row.sync ?? ''}) ${label(row)}: ${distinct} distinct events in ${delivered} ` +
          'deliveries ' +
      `on ${connections} connections ` +
      `(${created} 201s counted, up to ${2 * options.connections} more in flight at the ends of warm-up and run); ` +
      `${byRunEnd} delivered while the load ran, ` +
      // The wait ends after a minute: a backlog longer than that is reported as such, not as caught up.
      (distinct >= created
        ? `the last ${catchUpS.toFixed(1)} s after it ended; `
        : `${created - distinct} still to deliver when the wait ended ${catchUpS.toFixed(1)} s after it; `) +
      `idle drain ${drainPerS === null ? 'n/a' : drainPerS.toFixed(0)} deliveries/s for one subscription\n`
  }).join('')
  // --pairs: every round's ratio, so the spread that the median smooths out is in the report too.
  const groups = new Map<string, Row[]>()
  for (const row of rows) {
    if (row.variant === null || row.round === null) continue
    const key = `${row.workload}${row.sync === null ? '' : ` (${row.sync})`} ${label({ ...row, round: null })}`
    groups.set(key, [...(groups.get(key) ?? []), row])
  }
  const pairLines = [...groups].map(([key, group]) => {
    const ratios = group.map((row) => row.ratioToPlain).filter((ratio): ratio is number => ratio !== null)
    const cpu = group.map((row) => row.cpuToPlain).filter((ratio): ratio is number => ratio !== null)
    return `pairs, ${key}: × without ${ratios.map((ratio) => ratio.toFixed(2)).join(', ')} ` +
      `(median ${median(ratios).toFixed(2)}); ` +
      `CPU × without ${cpu.map((ratio) => ratio.toFixed(2)).join(', ')} (median ${median(cpu).toFixed(2)})\n`
  }).join('')
  const targetTable = table(['target', 'this run', ''],
    targets.map((check) => [check.target, check.value.toFixed(2), check.holds ? 'holds' : '**missed**']))

  const cpu = cpus()
  const machine = `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GB ` +
    `RAM, Node.js ${process.version}, ${process.platform}`
  const date = new Date().toISOString()
  const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`
  const fsync = `fdatasync of a 4 KiB append: ${fsyncMs.map((ms) => `${ms.toFixed(2)} ms`).join(' (start), ')} (end)`
  const postgres = options.stores.filter((store) => store.kind === 'postgres')
    .map((store) => `PostgreSQL: ${store.setting ?? ''}, PG_POOL_MAX=${process.env.PG_POOL_MAX ?? '10'}\n`).join('')
  process.stdout.write(`\n${date}  ${machine}\n${redactPassword(command)}  (LOG_LEVEL=${options.logLevel}, ` +
    `limits ${options.limits ? 'on' : 'off'})\n${fsync}\n${postgres}\n` +
    `${table(header, lines)}\n\n${deliveries}${pairLines}` +
    `${deliveries === '' && pairLines === '' ? '' : '\n'}${targetTable}\n`)

  mkdirSync(RESULTS, { recursive: true })
  const file = join(RESULTS, `bench-${date.replace(/[:.]/g, '-')}${options.quick ? '-quick' : ''}.json`)
  const recorded = {
    ...options,
    only: [...options.only],
    // The server URL, without a password it may carry.
    stores: options.stores.map(
      ({ url, ...store }) => ({ ...store, ...(url !== undefined && { url: redactPassword(url) }) }))
  }
  const record = { date, machine, command: redactPassword(command), fsyncMs, options: recorded, results: rows, targets }
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`)
  process.stdout.write(`\nwritten to ${file}\n`)
}

/** Hides the password of any URL in `text`. */
const redactPassword = (text: string): string => text.replace(/(\/\/[^:/@\s]+:)[^@\s]+@/g, '$1***@')

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exit(1)
})
