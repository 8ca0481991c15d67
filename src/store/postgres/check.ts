import pg from 'pg'
import { behindSchemaProblem, incompatibleSchemaProblem } from '../migration.js'
import { parsePostgresUrl } from './connection.js'
import { schemaState } from './migrate.js'
import { migrations } from './migrations.js'

/** Why a start on this database would fail, changing nothing; never the URL (it may hold a password). */
export async function checkPostgres (
  url: string, connectTimeoutMs: number, migrateOnStart = true
): Promise<string | undefined> {
  const target = parsePostgresUrl(url)
  const client = new pg.Client({ connectionString: target.connectionString, connectionTimeoutMillis: connectTimeoutMs })
  // A lost connection fails the statement, which says so; unheard, its 'error' would end the process.
  client.on('error', () => {})
  try {
    await client.connect()
    const { version, compatibleFrom } = await schemaState(client, target.schema)
    const known = migrations.length
    if (version > known && (compatibleFrom === null || compatibleFrom > known)) {
      return incompatibleSchemaProblem(version, known, compatibleFrom)
    }
    return !migrateOnStart && version < known ? behindSchemaProblem(version, known) : undefined
  } catch (err) {
    const code = (err as { code?: unknown }).code
    return `it does not answer (${typeof code === 'string' ? `${code}: ` : ''}${(err as Error).message})`
  } finally {
    await client.end().catch(() => undefined)
  }
}
