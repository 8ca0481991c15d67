import type pg from 'pg'

import { databaseUnavailable, storageFull, type ServiceError } from '../../errors.js'

/** True when DATABASE_URL names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl (url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url)
}

export interface PostgresTarget {
  /** The URL handed to the driver: the `schema` parameter is turned into a `search_path` option. */
  connectionString: string
  /** The schema the tables live in (created when missing), or undefined for the server's default. */
  schema?: string
}

/** A schema name that needs no quoting anywhere: in SQL and in the `-c search_path=` option. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * Reads a `postgres://` URL. A `?schema=name` parameter puts every table into that schema, so
 * several services (or test runs) can share one database. Throws with a message naming the problem.
 */
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
  parsed.searchParams.delete('schema')
  return { connectionString: withServerSettings(parsed.toString(), { search_path: schema }), schema }
}

/**
 * `connectionString` with server settings for every session it opens, added to its `options`
 * parameter (`-c name=value`) beside any already there. In the URL, not in the driver's `options`
 * setting: the driver lets a URL's `options` (a schema's search_path) replace that setting whole.
 */
export function withServerSettings (connectionString: string, settings: Readonly<Record<string, string | number>>): string {
  const parsed = new URL(connectionString)
  const added = Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)
  const options = parsed.searchParams.get('options')
  parsed.searchParams.set('options', [...(options === null ? [] : [options]), ...added].join(' '))
  return parsed.toString()
}

/** How much longer the driver waits for an answer than the server lets a statement run. */
const QUERY_TIMEOUT_MARGIN_MS = 1000

/**
 * A pool's bounds on every statement: on the server (a statement, a lock wait) and, a little later,
 * in the driver: a network that goes silent (no reset) would otherwise hold a caller until TCP gives up.
 */
export function statementBounds (statementTimeoutMs: number): Pick<pg.PoolConfig, 'statement_timeout' | 'lock_timeout' | 'query_timeout'> {
  return {
    statement_timeout: statementTimeoutMs,
    lock_timeout: statementTimeoutMs,
    query_timeout: statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS
  }
}

/** Node socket errors that mean the server cannot be reached (or went away mid-request). */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])

/** SQLSTATEs of a server that is shutting down, starting up, terminating us, or full. */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300'])

/**
 * What the driver says (without a code) when the connection broke, could not be made in time, or
 * did not answer a query within query_timeout (the network went silent: the connection is unusable).
 */
const DRIVER_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|Query read timeout)/

/**
 * True when an error means the connection itself is gone or was never made: it is dropped from the
 * pool rather than reused, and the request answered `unavailable`.
 */
export function isConnectionError (err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string') {
    return SOCKET_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08')
  }
  return DRIVER_MESSAGES.test(err.message)
}

/**
 * SQLSTATEs, besides a broken connection, of a database that cannot serve us right now: its
 * resources (class 53: memory, connections, configured limits), its state (55000: e.g. a database
 * that does not allow connections; 55006: in use; 55P03: lock_timeout), a statement cancelled by
 * statement_timeout or an operator (57014), an operator or crash shutdown (57P*), the system under
 * it (class 58: I/O), refused credentials (class 28) and a database that is gone (3D000). A
 * syntax error, a constraint or a bug stays what it is: a 500.
 */
const UNAVAILABLE_CODES = new Set(['55000', '55006', '55P03', '3D000'])
const UNAVAILABLE_CLASSES = new Set(['53', '57', '58', '28'])

/** PostgreSQL's disk_full: nothing could be written. */
const DISK_FULL = '53100'

/**
 * What a failure of PostgreSQL or of the connection to it means for a client: `storage-full`,
 * `unavailable` (worth a 503 and a retry), or undefined for a bug or a bad statement (a 500).
 */
export function postgresFailure (err: unknown): ServiceError | undefined {
  if (isConnectionError(err)) return databaseUnavailable(err)
  const code = (err as { code?: unknown } | undefined)?.code
  if (typeof code !== 'string' || !(err instanceof Error)) return undefined
  if (code === DISK_FULL) return storageFull(err)
  if (UNAVAILABLE_CODES.has(code) || UNAVAILABLE_CLASSES.has(code.slice(0, 2))) return databaseUnavailable(err)
  return undefined
}

/** Runs `fn` in a transaction on one pooled connection; a broken connection is dropped, not reused. */
export async function inTransaction<T> (pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
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
