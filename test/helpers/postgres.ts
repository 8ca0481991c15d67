import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { Cleanup } from './cleanup.js'

/** The PostgreSQL server tests may use; unset means the PostgreSQL tests register nothing. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL

/** `base` with `?schema=name` (replacing any schema it named). */
export function withSchema (base: string, schema: string): string {
  const url = new URL(base)
  url.searchParams.set('schema', schema)
  return url.toString()
}

/**
 * Admin sessions on the server itself (never through a pooler, whose server connections carry the
 * application_name of whichever client used them last), kept between statements: each new session
 * costs PostgreSQL a backend process, and the tests run hundreds of these statements. Idle, they do
 * not keep the test process alive (allowExitOnIdle); one ended from outside (a restart, a test ending
 * sessions) leaves the pool, and the next statement opens another.
 */
let adminPool: pg.Pool | undefined

/** One statement on an admin session of the server itself, outside any transaction. */
export async function adminQuery<R extends pg.QueryResultRow = pg.QueryResultRow> (text: string,
  values: unknown[] = []): Promise<R[]> {
  if (adminPool === undefined) {
    adminPool = new pg.Pool({ connectionString: directUrl(requireTestDatabaseUrl()), max: 2, allowExitOnIdle: true })
    // An idle session ended by the server: the pool has already dropped it.
    adminPool.on('error', () => {})
  }
  return (await adminPool.query<R>(text, values)).rows
}

function requireTestDatabaseUrl (): string {
  if (TEST_DATABASE_URL === undefined) throw new Error('TEST_DATABASE_URL is not set')
  return TEST_DATABASE_URL
}

/** How often a dropped schema is tried again after PostgreSQL chose the drop as a deadlock's victim. */
const DROP_ATTEMPTS = 5

/**
 * A DATABASE_URL on a schema of its own (created by the store on first open), dropped when the
 * test ends, so parallel runs never see each other's plants. The drop does not depend on the order
 * of the `t.after` hooks (Node 20 runs them in the order they were registered, so it may come
 * before the stores close): an idle pooled connection holds no lock, so DROP SCHEMA does not wait
 * for it, and a store closed afterwards only ends its connections. A connection that is busy (the
 * webhook dispatcher polls while its app is open) can lock two of the schema's tables in the order
 * its statement needs them, while DROP SCHEMA … CASCADE locks them one by one in its own; once in
 * CI PostgreSQL ended the drop as a deadlock's victim (40P01). Then it is tried again.
 */
export function scratchDatabaseUrl (t: Cleanup): { url: string, schema: string } {
  const schema = `plant_store_test_${randomBytes(6).toString('hex')}`
  t.after(async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
        return
      } catch (err) {
        if (attempt === DROP_ATTEMPTS || (err as { code?: unknown }).code !== '40P01') throw err
      }
    }
  })
  return { url: withSchema(requireTestDatabaseUrl(), schema), schema }
}

/** `url` with a unique application_name, so a test can find (and terminate) exactly its own sessions. */
export function withApplicationName (url: string, name: string): string {
  const parsed = new URL(url)
  parsed.searchParams.set('application_name', name)
  return parsed.toString()
}

/**
 * Ends every session of this application_name from an admin connection; returns how many. `listening`
 * ends only those whose last statement was a LISTEN: behind a pooler, the server connections that
 * last served this name's transactions carry it too, and ending them would fail whoever the pooler
 * hands them to next, not the connection under test.
 */
export async function terminateSessions (applicationName: string, { listening = false } = {}): Promise<number> {
  const rows = await adminQuery<{ terminated: boolean }>(
    'SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE application_name = $1 AND ' +
      'pid <> pg_backend_pid()' +
    (listening ? " AND query LIKE 'LISTEN %'" : ''), [applicationName])
  return rows.filter((row) => row.terminated).length
}

/**
 * A database of its own on the test server (created now, dropped with its sessions when the test
 * ends), for tests that change a whole database (ALTER DATABASE …): never the shared one. Returns
 * its URL and its name.
 */
export async function scratchDatabase (t: { after: (fn: () => Promise<void>) => void }): Promise<{
  url: string,
  name: string
}> {
  const name = `plant_store_scratch_${randomBytes(6).toString('hex')}`
  await adminQuery(`CREATE DATABASE ${name}`)
  t.after(async () => { await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) })
  const url = new URL(requireTestDatabaseUrl())
  url.pathname = `/${name}`
  return { url: url.toString(), name }
}

/** Ends every session connected to database `name` from an admin connection; returns how many. */
export async function terminateDatabaseSessions (name: string): Promise<number> {
  const rows = await adminQuery<{ terminated: boolean }>(
    'SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE datname = $1 AND ' +
      'pid <> pg_backend_pid()', [name])
  return rows.filter((row) => row.terminated).length
}

/**
 * PostgreSQL itself, for what needs a session of its own (LISTEN), when TEST_DATABASE_URL is a
 * transaction pooler in front of it (.ci/pooled-tests); unset, TEST_DATABASE_URL is that server.
 */
export const TEST_DATABASE_DIRECT_URL = process.env.TEST_DATABASE_DIRECT_URL ?? TEST_DATABASE_URL

/** `url` (on TEST_DATABASE_URL's server: its database, schema, application name) reached directly. */
export function directUrl (url: string): string {
  if (TEST_DATABASE_DIRECT_URL === undefined) throw new Error('TEST_DATABASE_URL is not set')
  const direct = new URL(TEST_DATABASE_DIRECT_URL)
  const parsed = new URL(url)
  parsed.host = direct.host
  return parsed.toString()
}
