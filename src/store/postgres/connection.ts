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

/** `schema.` before each table's name: a lone statement then needs no search_path (no session state). */
export const tablePrefix = (schema: string | undefined): string => schema === undefined ? '' : `${schema}.`

type Queryable = pg.Pool | pg.PoolClient | pg.ClientBase

type RunStatement<S extends string> = <R extends pg.QueryResultRow = pg.QueryResultRow>(
  db: Queryable, statement: S, values?: unknown[]) => Promise<pg.QueryResult<R>>

/**
 * Unnamed statements: a transaction pooler (PgBouncer) hands the session of a named one to other clients. The
 * driver's own promise, which carries every failure, unwrapped.
 */
export function statementRunner<S extends string> (sql: Readonly<Record<S, string>>): RunStatement<S> {
  return <R extends pg.QueryResultRow>(db: Queryable, statement: S, values: unknown[] = []) =>
    db.query<R>(sql[statement], values)
}

/** `?schema=name` lets several services (or test runs) share one database. */
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

/** DATABASE_URL as messages may name it: never the password (nor other query parameters, which may hold one). */
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

/** Set per transaction (`set_config(…, true)`): a transaction pooler refuses startup parameters, shares sessions. */
interface TransactionSettings {
  schema?: string | undefined // search_path
  statementTimeoutMs?: number | undefined // statement_timeout and lock_timeout
  /** synchronous_commit = off: a crash may lose the last commits (dispatcher bookkeeping only). */
  asynchronousCommit?: boolean
}

/** A pool's transaction settings as one statement ('' for none). */
const SETTINGS = new WeakMap<pg.Pool, string>()

/** BEGIN and the settings in one round trip (simple protocol). */
const opening = (pool: pg.Pool): string => {
  const settings = SETTINGS.get(pool) ?? ''
  return settings === '' ? 'BEGIN' : `BEGIN; ${settings}`
}

/** The values are a checked schema name (SCHEMA_NAME), integers and `off`: nothing to quote. */
function settingsSql ({ schema, statementTimeoutMs, asynchronousCommit }: TransactionSettings): string {
  const settings: Array<[string, string]> = []
  if (schema !== undefined) settings.push(['search_path', schema])
  const timeout = String(statementTimeoutMs)
  if (statementTimeoutMs !== undefined) settings.push(['statement_timeout', timeout], ['lock_timeout', timeout])
  if (asynchronousCommit === true) settings.push(['synchronous_commit', 'off'])
  if (settings.length === 0) return ''
  return `SELECT ${settings.map(([name, value]) => `set_config('${name}', '${value}', true)`).join(', ')}`
}

/** `text` after `pool`'s settings in one simple-protocol message: one round trip, bounded as a transaction. */
export async function boundedQuery<R extends pg.QueryResultRow> (pool: pg.Pool, text: string): Promise<R[]> {
  const settings = SETTINGS.get(pool) ?? ''
  if (settings === '') return (await pool.query<R>(text)).rows
  const results = (await pool.query(`${settings}; ${text}`)) as unknown as Array<pg.QueryResult<R>>
  return results[1]?.rows ?? []
}

/** A lone statement runs as it is; with asynchronous commit in a transaction (cheaper than a WAL flush). */
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

const SOCKET_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'
])

const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300'])

// `timeout expired`: a new connection's own bound (each pooled client's connectionTimeoutMillis).
const DRIVER_MESSAGES = new RegExp('^(Connection terminated|timeout exceeded when trying to connect|timeout expired$|' +
  'Client has encountered a connection error|Client was closed and is not queryable|Query read timeout)')

/** A broken connection is dropped from the pool rather than reused. */
export function isConnectionError (err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string') return SOCKET_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08')
  return DRIVER_MESSAGES.test(err.message)
}

// A database that cannot serve us now, read-only (25006) too: a standby or demoted primary while a failover runs.
const UNAVAILABLE_CODES = new Set(['55000', '55006', '55P03', '3D000', '25006'])
const UNAVAILABLE_CLASSES = new Set(['53', '57', '58', '28'])
// A table, column or function this code uses is missing (a newer release's contract step ran too early).
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

const mapFailure = (err: unknown): never => { throw postgresFailure(err) ?? err }

/**
 * `work`'s promise, a driver's failure mapped by postgresFailure, whether `work` rejects or throws before it returns.
 * Not async: a read is then one promise around the driver's (docs/performance.md#what-the-measurements-decided).
 */
export function withPostgresFailures<T> (work: () => Promise<T>): Promise<T> {
  try {
    return work().catch(mapFailure)
  } catch (err) {
    return Promise.reject(err).catch(mapFailure)
  }
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
