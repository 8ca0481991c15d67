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
  const options = parsed.searchParams.get('options')
  parsed.searchParams.set('options', `${options === null ? '' : `${options} `}-c search_path=${schema}`)
  return { connectionString: parsed.toString(), schema }
}

/** Node socket errors that mean the server cannot be reached (or went away mid-request). */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])

/** SQLSTATEs of a server that is shutting down, starting up, terminating us, or full. */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300'])

/** What the driver says (without a code) when the connection broke or could not be made in time. */
const DRIVER_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable)/

/**
 * True when an error means "the database cannot be reached right now" (worth a 503 and a retry)
 * rather than a bug or a bad statement (a 500).
 */
export function isConnectionError (err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string') {
    return SOCKET_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08')
  }
  return DRIVER_MESSAGES.test(err.message)
}
