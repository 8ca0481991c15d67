import { execFile, execFileSync } from 'node:child_process'
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import type { Cleanup } from './cleanup.js'
import { freePort } from './ports.js'

const run = promisify(execFile)

/** Debian's server binaries (package postgresql), newest version first; PG_BIN names another directory. */
function binDir (): string {
  if (process.env.PG_BIN !== undefined) return process.env.PG_BIN
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root).filter((name) => /^\d+$/.test(name)).sort(
      (a, b) => Number(b) - Number(a))
    : []
  if (versions[0] === undefined) {
    throw new Error(`no PostgreSQL server binaries under ${root} (apt-get install postgresql)`)
  }
  return join(root, versions[0], 'bin')
}

/** The server refuses to run as root: as root (CI), its commands run as the `postgres` system user. */
const asRoot = process.getuid?.() === 0

async function pgCommand (command: string, args: readonly string[]): Promise<string> {
  const file = join(binDir(), command)
  const { stdout } = asRoot
    ? await run('runuser', ['-u', 'postgres', '--', file, ...args], { cwd: tmpdir() })
    : await run(file, args, { cwd: tmpdir() })
  return stdout
}

/** A directory the server's user owns, removed when the test ends. */
function dataDirectory (t: Cleanup, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }))
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }))
    chownSync(dir, uid, gid)
  }
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

/** A throw-away PostgreSQL server of one test: its own data directory, loopback port and socket directory. */
export interface PgCluster {
  port: number
  /** `postgres://postgres@127.0.0.1:PORT/DATABASE` (trust authentication). */
  url: (database?: string) => string
  start: () => Promise<void>
  /** `fast` ends sessions and checkpoints; `immediate` is a crash (recovery from WAL at the next start). */
  stop: (mode?: 'fast' | 'immediate') => Promise<void>
  restart: () => Promise<void>
  /** One statement on a connection of its own. */
  query: <R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>
  /** A streaming standby of this server (pg_basebackup -R), started, on a port of its own. */
  standby: () => Promise<PgCluster>
  /** Ends recovery: a standby becomes a primary that accepts writes. */
  promote: () => Promise<void>
  /** The server's log so far. */
  log: () => string
}

/** Few resources, no fsync (a test never outlives its machine), loopback only, a socket nobody else uses. */
function settings (dir: string, port: number): string {
  return [
    '',
    "listen_addresses = '127.0.0.1'",
    `port = ${port}`,
    `unix_socket_directories = '${dir}'`,
    'fsync = off',
    'full_page_writes = off',
    'shared_buffers = 16MB',
    'max_connections = 60',
    'max_wal_senders = 4',
    'wal_level = replica',
    ''
  ].join('\n')
}

async function open (t: Cleanup, dir: string, port: number): Promise<PgCluster> {
  const logFile = join(dir, 'server.log')
  let running = false
  const ctl = async (...args: string[]): Promise<void> => {
    await pgCommand('pg_ctl',
      ['-D', join(dir, 'data'), '-w', ...args])
  }
  const url = (database = 'postgres'): string => `postgres://postgres@127.0.0.1:${port}/${database}`
  const cluster: PgCluster = {
    port,
    url,
    start: async () => {
      await ctl('-l', logFile, 'start')
      running = true
    },
    stop: async (mode = 'fast') => {
      await ctl('-m', mode, 'stop')
      running = false
    },
    restart: async () => { await ctl('-m', 'fast', '-l', logFile, 'restart') },
    query: async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) => {
      const client = new pg.Client({ connectionString: url() })
      client.on('error', () => {})
      await client.connect()
      try {
        return (await client.query<R>(text, values)).rows
      } finally {
        await client.end()
      }
    },
    standby: async () => {
      const standbyDir = dataDirectory(t, 'plant-store-pg-standby-')
      await pgCommand('pg_basebackup',
        ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-D', join(standbyDir, 'data'), '-R', '-X', 'stream',
          '--no-sync'])
      const standbyPort = await freePort()
      appendFileSync(join(standbyDir, 'data', 'postgresql.conf'), settings(standbyDir, standbyPort))
      const made = await open(t, standbyDir, standbyPort)
      await made.start()
      return made
    },
    promote: async () => { await ctl('promote') },
    log: () => existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''
  }
  t.after(async () => { if (running) await cluster.stop('immediate') })
  return cluster
}

/**
 * initdb into a temporary directory and start the server on a free loopback port; it is stopped
 * (immediate) and its directory removed when the test ends. Register it through a cleanupStack so
 * that it stops after the servers that use it.
 */
export async function startCluster (t: Cleanup): Promise<PgCluster> {
  const dir = dataDirectory(t, 'plant-store-pg-')
  await pgCommand('initdb',
    ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'])
  const port = await freePort()
  appendFileSync(join(dir, 'data', 'postgresql.conf'), settings(dir, port))
  const cluster = await open(t, dir, port)
  await cluster.start()
  return cluster
}
