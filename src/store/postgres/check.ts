import pg from 'pg'
import { newerSchemaProblem } from '../contract.js'
import { parsePostgresUrl } from './connection.js'
import { migrations } from './migrations.js'

/**
 * Why a start on this PostgreSQL database would fail, or undefined when it would not: it must
 * answer, and any plant-store schema in it must not be newer than this code. Changes nothing
 * (no schema is created, no migration runs). The message never holds the URL (it may hold a password).
 */
export async function checkPostgres (url: string, connectTimeoutMs: number): Promise<string | undefined> {
  const target = parsePostgresUrl(url)
  const client = new pg.Client({ connectionString: target.connectionString, connectionTimeoutMillis: connectTimeoutMs })
  // A lost connection fails the statement, which says so; unheard, its 'error' would end the process.
  client.on('error', () => {})
  try {
    await client.connect()
    // Schema-qualified, not a search_path: that would be a session setting (see connection.ts).
    const table = target.schema === undefined ? 'plant_store_migrations' : `${target.schema}.plant_store_migrations`
    const { rows: [found] } = await client.query<{ name: string | null }>(
      'SELECT to_regclass($1)::text AS name', [table])
    if (found?.name === null || found === undefined) return undefined
    const { rows: [row] } = await client.query<{ version: number | null }>(
      `SELECT max(version) AS version FROM ${table}`)
    const version = row?.version ?? 0
    return version > migrations.length ? newerSchemaProblem(version, migrations.length) : undefined
  } catch (err) {
    const code = (err as { code?: unknown }).code
    return `it does not answer (${typeof code === 'string' ? `${code}: ` : ''}${(err as Error).message})`
  } finally {
    await client.end().catch(() => undefined)
  }
}
