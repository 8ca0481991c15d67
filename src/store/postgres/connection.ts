import type pg from 'pg'

import { databaseUnavailable, schemaUnavailable, storageFull, type ServiceError } from '../../lib/errors.js'
import type { PoolStats } from '../pool-stats.js'

export function isPostgresUrl (url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url)
}

export interface PostgresTarget {
  /** The URL without `schema`: every parameter left is one the driver (or a pooler) understands. */
  connectionString: string
  schema?: string
}

/** Needs no quoting anywhere in SQL. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * What statements put before a table's name: `schema.` (a SCHEMA_NAME needs no quoting). A lone
 * statement then resolves its tables without a search_path: one round trip, no session state.
 */
export const tablePrefix = (schema: string | undefined): string => schema === undefined ? '' : `${schema}.`

type Queryable = pg.Pool | pg.PoolClient | pg.ClientBase

/** Runs one of a set of statements by name. */
export type RunStatement<S extends string> = <R extends pg.QueryResultRow = pg.QueryResultRow>(
  db: Queryable, statement: S, values?: unknown[]) => Promise<pg.QueryResult<R>>

/**
 * Unnamed statements: a named prepared statement lives in a server session, which a transaction
 * pooler (PgBouncer's pool_mode = transaction) hands to another client after each transaction.
 */
export function statementRunner<S extends string> (sql: Readonly<Record<S, string>>): RunStatement<S> {
  return async <R extends pg.QueryResultRow>(db: Queryable, statement: S, values: unknown[] = []) =>
    await db.query<R>(sql[statement], values)
}

/** A `?schema=name` parameter lets several services (or test runs) share one database. */
export function parsePostgresUrl (url: string): PostgresTarget {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new Error('DATABASE_URL is not a valid postgres:// URL')
  }
  const schema = parsed.searchParams.get('schema') ?? undefined
  if (schema === undefined) return { connectionString: url }
  if (!SCHEMA_NAME.test(schema)) {
    throw new Error('DATABASE_URL schema must be a lower-case SQL name (a-z, 0-9, _; at most 63 characters)')
  }
  // PostgreSQL's own: CREATE SCHEMA refuses pg_ names, and its catalogs refuse our tables.
  if (schema.startsWith('pg_') || schema === 'information_schema') {
    throw new Error(`DATABASE_URL schema ${schema} is PostgreSQL's own (pg_… and information_schema are reserved): ` +
      'choose another name')
  }
  parsed.searchParams.delete('schema')
  return { connectionString: parsed.toString(), schema }
}

/**
 * DATABASE_URL as messages may name it: host, port, database and schema, never the user's password
 * (nor the query's other parameters, which may hold one).
 */
export function postgresName (url: string): string {
  try {
    const parsed = new URL(url)
    const schema = parsed.searchParams.get('schema')
    const host = parsed.host === '' ? parsed.searchParams.get('host') ?? 'localhost' : parsed.host
    return `${parsed.protocol}//${host}${parsed.pathname}${schema === null ? '' : ` (schema ${schema})`}`
  } catch {
    return 'DATABASE_URL'
  }
}

/**
 * What each transaction of a pool sets for itself (`set_config(…, true)`, gone at its end): never
 * a startup parameter or a session setting, which a transaction pooler (PgBouncer's
 * pool_mode = transaction) refuses or hands on to other clients.
 */
export interface TransactionSettings {
  /** search_path */
  schema?: string | undefined
  /** statement_timeout and lock_timeout */
  statementTimeoutMs?: number | undefined
  /** synchronous_commit = off: a crash may lose the last commits (dispatcher bookkeeping only). */
  asynchronousCommit?: boolean
}

/** What a pool's transactions set for themselves, as one statement ('' for nothing): see `opening`. */
const SETTINGS = new WeakMap<pg.Pool, string>()

/** How a transaction on a pool begins: BEGIN and its settings in one round trip (simple protocol). */
const opening = (pool: pg.Pool): string => {
  const settings = SETTINGS.get(pool) ?? ''
  return settings === '' ? 'BEGIN' : `BEGIN; ${settings}`
}

/** The values are a checked schema name (SCHEMA_NAME), integers and `off`: nothing to quote. */
function settingsSql ({ schema, statementTimeoutMs, asynchronousCommit }: TransactionSettings): string {
  const settings: Array<[string, string]> = [
    ...(schema === undefined ? [] : [['search_path', schema]] as Array<[string, string]>),
    ...(statementTimeoutMs === undefined
      ? []
      : [['statement_timeout', String(statementTimeoutMs)], ['lock_timeout', String(statementTimeoutMs)]] as
        Array<[string, string]>),
    ...(asynchronousCommit === true ? [['synchronous_commit', 'off']] as Array<[string, string]> : [])
  ]
  if (settings.length === 0) return ''
  return `SELECT ${settings.map(([name, value]) => `set_config('${name}', '${value}', true)`).join(', ')}`
}

/**
 * `text` (a statement without parameters, its values literals) with `pool`'s transaction settings,
 * in one simple-protocol message: one round trip, one implicit transaction, and the statement
 * bounded as a transaction's are (PostgreSQL arms statement_timeout per statement of the message).
 * Its rows.
 */
export async function boundedQuery<R extends pg.QueryResultRow> (pool: pg.Pool, text: string): Promise<R[]> {
  const settings = SETTINGS.get(pool) ?? ''
  if (settings === '') return (await pool.query<R>(text)).rows
  const results = (await pool.query(`${settings}; ${text}`)) as unknown as Array<pg.QueryResult<R>>
  return results[1]?.rows ?? []
}

/**
 * `pool` whose transactions (inTransaction) carry `settings`. A lone statement runs as it is, one
 * round trip, bounded by the driver's query_timeout: it names its tables schema-qualified (tablePrefix).
 * With asynchronous commit (the dispatcher's bookkeeping) it runs in a transaction of its own instead:
 * two more round trips cost less than the WAL flush a commit would otherwise wait for, and only a
 * transaction can carry the setting without session state.
 */
export function settledPool (pool: pg.Pool, settings: TransactionSettings): pg.Pool {
  const query = settings.asynchronousCommit === true
    ? async (...args: unknown[]): Promise<unknown> => await inTransaction(view, async (client) =>
      await (client.query as (...values: unknown[]) => Promise<unknown>).apply(client, args))
    : pool.query.bind(pool)
  const view = {
    connect: async () => await pool.connect(),
    query,
    end: async () => { await pool.end() },
    on: (...args: Parameters<pg.Pool['on']>) => { pool.on(...args); return view }
  } as unknown as pg.Pool
  SETTINGS.set(view, settingsSql(settings))
  return view
}

const QUERY_TIMEOUT_MARGIN_MS = 1000

/** Bounded in the driver: a network that goes silent would otherwise hold a caller until TCP gives up. */
export function queryTimeout (statementTimeoutMs: number): Pick<pg.PoolConfig, 'query_timeout'> {
  return { query_timeout: statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS }
}

const SOCKET_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'
])

const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300'])

const DRIVER_MESSAGES = new RegExp('^(Connection terminated|timeout exceeded when trying to connect|' +
  'Client has encountered a connection error|Client was closed and is not queryable|Query read timeout)')

/** A broken connection is dropped from the pool rather than reused. */
export function isConnectionError (err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string') {
    return SOCKET_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08')
  }
  return DRIVER_MESSAGES.test(err.message)
}

// Besides a broken connection, a database that cannot serve us right now: resources (53), state
// (55000, 55006, 55P03), cancels and shutdowns (57), I/O (58), credentials (28), gone (3D000), and
// read-only (25006): a standby not yet promoted, or a demoted primary, while a failover repoints us.
const UNAVAILABLE_CODES = new Set(['55000', '55006', '55P03', '3D000', '25006'])
const UNAVAILABLE_CLASSES = new Set(['53', '57', '58', '28'])
// A table, column or function this code uses is not there: the schema is not one this instance can
// serve (a newer release's contract step ran too early); another instance, or a later moment, can.
const SCHEMA_CODES = new Set(['42P01', '42703', '42883'])

const DISK_FULL = '53100'

/** `storage-full`, `unavailable` (the database, or its schema), or undefined for a bug or a bad statement (a 500). */
export function postgresFailure (err: unknown): ServiceError | undefined {
  if (isConnectionError(err)) return databaseUnavailable(err)
  const code = (err as { code?: unknown } | undefined)?.code
  if (typeof code !== 'string' || !(err instanceof Error)) return undefined
  if (code === DISK_FULL) return storageFull(err)
  if (SCHEMA_CODES.has(code)) return schemaUnavailable(err)
  if (UNAVAILABLE_CODES.has(code) || UNAVAILABLE_CLASSES.has(code.slice(0, 2))) return databaseUnavailable(err)
  return undefined
}

/**
 * A server that ends a connection (a restart, a failover, `pg_terminate_backend`, idle_session_timeout)
 * makes its client emit 'error', idle or checked out between two statements: unheard, that ends the
 * process. An idle client's error reaches the pool's listener, which reports it; a checked-out one's
 * fails its holder's next statement, which drops it, so the client's own listener only has to be there.
 */
export function survivingDisconnects (pool: pg.Pool, onError?: (err: Error) => void): pg.Pool {
  pool.on('error', (err) => { onError?.(err) })
  pool.on('connect', (client) => { client.on('error', () => {}) })
  return pool
}

export async function inTransaction<T> (pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query(opening(pool))
    const result = await fn(client)
    await client.query('COMMIT')
    return result
  } catch (err) {
    if (isConnectionError(err)) broken = err as Error
    else await client.query('ROLLBACK').catch((rollbackErr: unknown) => { broken = rollbackErr as Error })
    throw err
  } finally {
    client.release(broken)
  }
}

/** A pg.Pool's counts now, under `name` (read from the pool itself: a settledPool view has none). */
export function poolStats (name: string, pool: pg.Pool): PoolStats {
  return {
    pool: name,
    max: pool.options.max ?? 10,
    idle: pool.idleCount,
    busy: pool.totalCount - pool.idleCount,
    waiting: pool.waitingCount
  }
}
