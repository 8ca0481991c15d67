import { spawn, type ChildProcess } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { Cleanup } from './cleanup.js'
import { freePort } from './ports.js'

/** Debian's pgbouncer (`apt-get install pgbouncer`); PGBOUNCER names another binary. */
const PGBOUNCER = process.env.PGBOUNCER ?? '/usr/sbin/pgbouncer'

export type PoolMode = 'session' | 'transaction' | 'statement'

export interface PgbouncerOptions {
  /** The PostgreSQL server behind the pooler: its URL's host, port and user are used (its database is not). */
  backend: string
  poolMode: PoolMode
  /** More `[pgbouncer]` settings; none by default, so the pooler behaves as a stock install does. */
  settings?: Record<string, string | number>
}

/** A pgbouncer process of this test's own, on a free loopback port, its config in a temporary directory. */
export interface Pgbouncer {
  port: number
  /** `backend` (or any URL on the backend server) with host and port swapped for the pooler's. */
  url: (databaseUrl?: string) => string
  /** Points every database at another server (a promoted standby) and reloads; open server connections are dropped. */
  repoint: (host: string, port: number) => Promise<void>
  /** Everything pgbouncer logged so far (stderr). */
  log: () => string
  stop: () => Promise<void>
}

function config (dir: string, port: number, options: PgbouncerOptions, host: string, backendPort: number): string {
  const settings: Record<string, string | number> = {
    listen_addr: '127.0.0.1',
    listen_port: port,
    // No socket in /tmp: parallel pgbouncers would fight over it.
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: join(dir, 'users.txt'),
    admin_users: new URL(options.backend).username,
    pool_mode: options.poolMode,
    // pgbouncer refuses to run as root (CI's user); it drops to the PostgreSQL server's system user.
    ...(process.getuid?.() === 0 ? { user: 'postgres' } : {}),
    ...options.settings
  }
  return [
    '[databases]',
    // A wildcard: every database name (scratch databases included) goes to the same server.
    `* = host=${host} port=${backendPort}`,
    '[pgbouncer]',
    ...Object.entries(settings).map(([key, value]) => `${key} = ${value}`)
  ].join('\n') + '\n'
}

async function waitForAdmin (url: string, child: ChildProcess, log: () => string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${log()}`)
    const client = new pg.Client({ connectionString: url })
    client.on('error', () => {})
    try {
      await client.connect()
      await client.query('SHOW VERSION')
      return
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50))
    } finally {
      await client.end().catch(() => {})
    }
  }
  throw new Error(`pgbouncer did not accept connections: ${log()}`)
}

/** One command on pgbouncer's admin console (simple protocol, as the console requires). */
async function adminCommand (url: string, command: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => {})
  await client.connect()
  try {
    await client.query(command)
  } finally {
    await client.end()
  }
}

/** Starts pgbouncer in front of `options.backend`; it is stopped when the test ends (`t`), or by `stop()`. */
export async function startPgbouncer (options: PgbouncerOptions, t?: Cleanup): Promise<Pgbouncer> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-pgbouncer-'))
  // Readable by the user pgbouncer drops to.
  chmodSync(dir, 0o755)
  const backend = new URL(options.backend)
  const port = await freePort()
  const iniFile = join(dir, 'pgbouncer.ini')
  const write = (host: string, backendPort: number): void => {
    writeFileSync(iniFile, config(dir, port, options, host, backendPort), { mode: 0o644 })
  }
  writeFileSync(join(dir, 'users.txt'), `"${decodeURIComponent(backend.username)}" ""\n`, { mode: 0o644 })
  write(backend.hostname, Number(backend.port === '' ? 5432 : backend.port))

  let output = ''
  const child = spawn(PGBOUNCER, [iniFile], { stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const log = (): string => output

  const url = (databaseUrl = options.backend): string => {
    const parsed = new URL(databaseUrl)
    parsed.hostname = '127.0.0.1'
    parsed.port = String(port)
    return parsed.toString()
  }
  const adminUrl = url(new URL('/pgbouncer', options.backend).toString())

  let stopped = false
  const stop = async (): Promise<void> => {
    if (stopped) return
    stopped = true
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  }
  t?.after(stop)
  try {
    await waitForAdmin(adminUrl, child, log)
  } catch (err) {
    await stop()
    throw err
  }
  return {
    port,
    url,
    repoint: async (host, backendPort) => {
      write(host, backendPort)
      await adminCommand(adminUrl, 'RELOAD')
      // Connections to the old server are closed as soon as their clients release them.
      await adminCommand(adminUrl, 'RECONNECT')
    },
    log,
    stop
  }
}
