import pg from 'pg'
import { giveUpOnSilence } from './silence.js'
import { WaitBoundPool } from './wait-bound-pool.js'

type TextParser = (value: string) => unknown

/**
 * The driver asks for every column of every result. Its own table is keyed by OID in a form each lookup hashes, so
 * text parsers are kept here once looked up (nothing in the service calls setTypeParser).
 */
const textParsers = new Map<number, TextParser>([[pg.types.builtins.INT8, BigInt]])

/** int8 as bigint, so ids beyond 2^53 arrive exactly. Not in connection.ts: SQLite-only processes load that. */
export const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (format === 'binary') return pg.types.getTypeParser(oid, format)
    const known = textParsers.get(oid)
    if (known !== undefined) return known
    const parser: TextParser = pg.types.getTypeParser(oid, 'text')
    textParsers.set(oid, parser)
    return parser
  }) as typeof pg.types.getTypeParser
}

/**
 * A pool reading int8 as bigint, whose checkouts give up after `connectionTimeoutMillis`; an idle connection's error
 * goes to `onError`, the next statement reports it.
 */
export function openPool (config: pg.PoolConfig, statementTimeoutMs: number, onError?: (err: Error) => void): pg.Pool {
  const pool = new WaitBoundPool({ ...config, types: pgTypes })
  // A second past the server's bound: a network that goes silent would otherwise hold a caller until TCP gives up.
  giveUpOnSilence(pool, statementTimeoutMs + 1000)
  // An unheard client 'error' (the server ended the connection) would end the process.
  pool.on('error', (err) => { onError?.(err) })
  pool.on('connect', (client) => { client.on('error', () => {}) })
  return pool
}
