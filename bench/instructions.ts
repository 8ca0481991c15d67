/**
 * `npm run bench:instructions`: the instructions a request costs plant-store and the minimal
 * service (bench/minimal.ts), counted by valgrind's callgrind instead of timed. With `--db
 * postgres://…`: plant-store on that PostgreSQL beside the idiomatic peer (bench/peer-pg.ts), the
 * node side of what `npm run bench -- --db` times, each on a fresh schema dropped afterwards. On a shared machine
 * whose speed drifts by more than the effect being measured, time needs many alternating rounds;
 * an instruction count is steady run after run, so one run tells whether a change saves little. It
 * counts user-space work only:
 * the kernel's share (the socket's system calls) is not in it. Equal instructions can take unequal time: --cache
 * simulates the caches and branch predictor as well and estimates cycles (about twice as slow again).
 *
 *   npm run bench:instructions -- [--only read,list] [--warmup 12000] [--requests 6000]
 *                                 [--connections 32] [--set NAME=VALUE ...] [--db postgres://…] [--cache]
 *
 * --set passes a setting to plant-store (RATE_LIMIT_MAX=0: what the rate limit costs). Needs
 * valgrind (Debian's package). A run takes minutes: valgrind runs the server ~50 × slower.
 */
import { execFileSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { parsePostgresUrl } from '../src/store/postgres/connection.js'
import { withSchema } from '../test/helpers/postgres.js'
import { SERVER_JS } from '../test/helpers/server-process.js'
import { calls, estimatedCycles, windowCounts } from './callgrind.js'
import { CONNECTIONS, SERVER_ENV, SERVER_NODE_FLAGS, startListening, UNREACHABLE } from './measure.js'
import { postgresQuery, seedReference } from './postgres.js'
import { seed } from './seed.js'

type Workload = 'read' | 'list'
type Server = 'minimal' | 'peer' | 'plant-store'

const MINIMAL = fileURLToPath(new URL('./minimal.js', import.meta.url))
const PEER_PG = fileURLToPath(new URL('./peer-pg.js', import.meta.url))
const TOKEN = 'instructions-benchmark-token-0123456789'
const SEEDED_PLANTS = 1000
/**
 * V8 compiles and collects garbage on the main thread, when the work (not the clock) says so. With
 * the memory reducer's timers left on, a full collection fell inside one count and not another.
 */
const DETERMINISTIC_V8 = ['--predictable', '--single-threaded', '--no-memory-reducer']

interface Count {
  server: Server
  workload: Workload
  /** Instructions a request, without the optimizing compilation still under way nor the clock's work. */
  steady: number
  total: number
  compile: number
  /** The load-shedding monitor's once-a-second sample (`WindowCounts.clock`). */
  clock: number
  gc: number
  /**
   * With --cache, a request's cycles as the simulated caches estimate them and its mispredicted branches, the steady
   * work's as `steady` counts it: what time tells apart at equal instructions.
   */
  cycles?: number
  mispredicted?: number
  /**
   * Full collections inside the counted window: a run whose window held one is not comparable with one that did not.
   */
  fullCollections: number
}

/** Sends `count` GETs over `agent`'s keep-alive connections; any answer but 200 stops the run. */
async function drive (agent: Agent, url: string, paths: readonly string[], count: number,
  connections: number): Promise<void> {
  let sent = 0
  const one = async (path: string): Promise<void> => {
    await new Promise<void>((resolve, reject) => {
      const req = request(`${url}${path}`, { agent, headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => { body += chunk })
        res.on('end',
          () => {
            res.statusCode === 200
              ? resolve()
              : reject(
                new Error(`GET ${path}: ${res.statusCode ?? '?'} ${body}`))
          })
      })
      req.on('error', reject)
      req.end()
    })
  }
  await Promise.all(Array.from({ length: connections }, async () => {
    while (sent < count) await one(paths[sent++ % paths.length] as string)
  }))
}

/** `db`: `--db`'s URL, and the server it names without `?schema=` (the references' and the clean-up's). */
interface Options {
  warmup: number
  requests: number
  connections: number
  /** valgrind's cache and branch simulation as well: slower, and what `cycles` needs. */
  cache: boolean
  set: Record<string, string>
  db?: { url: string, server: string }
}

/** The server's seeded ids and environment: on SQLite in `work`, or on a fresh schema of `options.db`. */
async function prepare (server: Server, work: string, options: Options,
  schemas: string[]): Promise<{ ids: ReadonlyArray<bigint | number>, env: NodeJS.ProcessEnv }> {
  const oneTo = (): number[] => Array.from({ length: SEEDED_PLANTS }, (_, i) => i + 1)
  const schema = `plant_store_instructions_${process.pid}_${server.replace('-', '_')}`
  if (options.db !== undefined) schemas.push(schema)
  if (server === 'peer') {
    if (options.db === undefined) throw new Error('the idiomatic peer runs on PostgreSQL only (--db)')
    const db = options.db.server
    await seedReference(db, schema, SEEDED_PLANTS)
    return {
      ids: oneTo(),
      env: { ...process.env, ...SERVER_ENV, PEER_DATABASE_URL: db, PEER_SCHEMA: schema, PEER_TOKEN: TOKEN }
    }
  }
  if (server === 'minimal') {
    return {
      ids: oneTo(),
      env: {
        ...process.env, ...SERVER_ENV, MINIMAL_DATABASE: join(work, 'minimal.db'), MINIMAL_SEED: String(SEEDED_PLANTS)
      }
    }
  }
  const database = options.db === undefined ? join(work, 'plants.db') : withSchema(options.db.url, schema)
  return {
    ids: await seed(database, TOKEN, SEEDED_PLANTS),
    env: {
      ...process.env,
      ...SERVER_ENV,
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: database,
      API_TOKENS: TOKEN,
      LOG_LEVEL: 'warn',
      // Limits no run reaches, as npm run bench sets them.
      RATE_LIMIT_MAX: String(UNREACHABLE),
      MAX_REQUESTS_PER_SOCKET: String(UNREACHABLE),
      // Under valgrind the event loop's delay would shed load; the webhook poll is work the clock
      // sets (once a second), not the requests.
      MAX_EVENT_LOOP_DELAY_MS: '0',
      WEBHOOK_POLL_INTERVAL_MS: '60000',
      ...options.set
    }
  }
}

async function measure (server: Server, workload: Workload, options: Options): Promise<Count> {
  const work = mkdtempSync(join(tmpdir(), 'plant-store-instructions-'))
  const schemas: string[] = []
  let child: ChildProcess | undefined
  // One set of connections for the warm-up and the count: opening them is not what is counted.
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections })
  try {
    const { ids, env } = await prepare(server, work, options, schemas)
    const paths = workload === 'read'
      ? ids.map((id) => `/plants/${id}`)
      : ids.slice(ids.length / 2, -20).map((id) => `/plants?limit=20&after=${id}`)

    const out = join(work, 'callgrind.out')
    const script = { minimal: MINIMAL, peer: PEER_PG, 'plant-store': SERVER_JS }[server]
    const simulate = options.cache ? ['--cache-sim=yes', '--branch-sim=yes'] : []
    const started = await startListening('valgrind',
      ['--tool=callgrind', ...simulate, `--callgrind-out-file=${out}`, '--dump-instr=no', '--dump-line=no',
        process.execPath, ...DETERMINISTIC_V8, ...SERVER_NODE_FLAGS, script], env, join(work, 'server.log'), 300_000)
    child = started.child
    const { url } = started
    const pid = String(child.pid)
    await drive(agent, url, paths, options.warmup, options.connections)
    // valgrind names its control files after $HOST, which plant-store's environment sets: the
    // control command must see the same.
    execFileSync('callgrind_control', ['--zero', pid], { env, stdio: 'ignore' })
    await drive(agent, url, paths, options.requests, options.connections)
    execFileSync('callgrind_control', ['--dump', pid], { env, stdio: 'ignore' })
    const dumps = readdirSync(work).filter((name) => name.startsWith('callgrind.out.')).sort()
    const dump = join(work, dumps.at(-1) ?? 'callgrind.out')
    const dumped = readFileSync(dump, 'utf8')
    const listing = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', dump],
      { maxBuffer: 1 << 28 }).toString()
    const { totals, compile, clock, gc, steady } = windowCounts(dumped, listing)
    const perRequest = (count: number | undefined): number => (count ?? Number.NaN) / options.requests
    return {
      server,
      workload,
      steady: perRequest(steady.Ir),
      total: perRequest(totals.Ir),
      compile: perRequest(compile.Ir),
      clock: perRequest(clock.Ir),
      gc: perRequest(gc.Ir),
      ...(options.cache && {
        cycles: perRequest(estimatedCycles(steady)),
        mispredicted: perRequest((steady.Bcm ?? Number.NaN) + (steady.Bim ?? Number.NaN))
      }),
      fullCollections: calls(dumped, 'v8::internal::Heap::MarkCompact()')
    }
  } finally {
    agent.destroy()
    child?.kill('SIGKILL')
    rmSync(work, { recursive: true, force: true })
    const server = options.db?.server
    if (server !== undefined) {
      for (const schema of schemas) await postgresQuery(server, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    }
  }
}

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      // With --db: read, all the peer serves.
      only: { type: 'string' },
      warmup: { type: 'string', default: '12000' },
      requests: { type: 'string', default: '6000' },
      connections: { type: 'string', default: String(CONNECTIONS) },
      set: { type: 'string', multiple: true, default: [] },
      cache: { type: 'boolean', default: false },
      db: { type: 'string' }
    }
  })
  const only = values.only ?? (values.db === undefined ? 'read,list' : 'read')
  const workloads = only.split(',').map((name) => name.trim())
  for (const name of workloads) {
    if (name !== 'read' && name !== 'list') {
      throw new Error(`--only: unknown workload "${name}" (read, list)`)
    }
  }
  const whole = (name: string, text: string): number => {
    const value = Number(text)
    if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number above 0`)
    return value
  }
  const set: Record<string, string> = {}
  for (const setting of values.set) {
    const [name, ...value] = setting.split('=')
    if (name === undefined || name === '' || value.length === 0) {
      throw new Error(`--set ${setting}: expected NAME=VALUE`)
    }
    set[name] = value.join('=')
  }
  const options: Options = {
    warmup: whole('warmup', values.warmup),
    requests: whole('requests', values.requests),
    connections: whole('connections', values.connections),
    cache: values.cache,
    set,
    ...(values.db !== undefined && { db: { url: values.db, server: parsePostgresUrl(values.db).connectionString } })
  }
  if (options.db !== undefined && workloads.includes('list')) {
    throw new Error('--db: the peer serves reads only (--only read)')
  }
  const reference: Server = options.db === undefined ? 'minimal' : 'peer'
  process.stderr.write(`instructions a request under callgrind: ${options.warmup} ` +
    `requests of warm-up, then ${options.requests} counted, ` +
    `${options.connections} connections${values.set.length > 0 ? `, plant-store with ${values.set.join(' ')}` : ''}` +
    `${options.db === undefined ? '' : ', on PostgreSQL beside the idiomatic peer'}\n`)

  const k = (instructions: number): string => (instructions / 1000).toFixed(1)
  const rows: Count[] = []
  for (const workload of workloads as Workload[]) {
    for (const server of [reference, 'plant-store'] as const) {
      const count = await measure(server, workload, options)
      // A dump this reading no longer understands must fail the run (CI's smoke run too), not print NaN.
      if (!Number.isFinite(count.steady) || (options.cache && !Number.isFinite(count.cycles))) {
        throw new Error(`${workload} ${server}: callgrind's dump gave no count (${JSON.stringify(count)})`)
      }
      rows.push(count)
      process.stderr.write(`  ${workload} ${server}: ${k(count.steady)}k instructions a request\n`)
    }
  }
  const cache = options.cache ? ` | k cycles (estimated) | × ${reference} | mispredicted branches` : ''
  console.log(`\n| workload | server | k instructions a request | × ${reference}${cache} | total | optimizing ` +
    'compilation | load-shedding sample | garbage collection | full collections |')
  console.log(`|---|---|---|---|${options.cache ? '---|---|---|' : ''}---|---|---|---|---|`)
  for (const row of rows) {
    const base = rows.find((other) => other.workload === row.workload && other.server === reference)
    const ratio = (of: (count: Count) => number | undefined): string =>
      row.server === reference || base === undefined ? '' : ((of(row) ?? 0) / (of(base) ?? 0)).toFixed(2)
    const cycles = options.cache
      ? ` | ${k(row.cycles ?? Number.NaN)} | ${ratio((count) => count.cycles)} | ${(row.mispredicted ?? 0).toFixed(0)}`
      : ''
    console.log(
      `| ${row.workload} | ${row.server} | ${k(row.steady)} | ${ratio((count) => count.steady)}${cycles} ` +
        `| ${k(row.total)} | ${k(row.compile)} | ${k(row.clock)} | ${k(row.gc)} | ${row.fullCollections} |`)
  }
}

main().catch((err: unknown) => {
  console.error('bench:instructions failed:', err)
  process.exitCode = 1
})
