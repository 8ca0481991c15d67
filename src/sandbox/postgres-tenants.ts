import pg from 'pg'
import { sha256 } from '../digest.js'
import { parsePostgresUrl, statementBounds } from '../store/postgres/connection.js'
import { createPostgresStore } from '../store/postgres/postgres-store.js'
import type { TenantBackend } from './tenants.js'

export interface PostgresTenantOptions {
  /** DATABASE_URL: its schema holds the registry; each tenant gets a schema of its own beside it. */
  url: string
  connectTimeoutMs?: number
  statementTimeoutMs?: number
  onIdleError?: (err: Error) => void
}

/** A tenant's schema: a digest of DATABASE_URL's schema and the tenant key, so two sandboxes on one database never share one. */
export const tenantSchema = (mainSchema: string | undefined, key: string): string =>
  `sbx_${sha256(`${mainSchema ?? ''}/${key}`, 'hex').slice(0, 40)}`

const REGISTRY = `CREATE TABLE IF NOT EXISTS sandbox_tenants (
  key          text   PRIMARY KEY,
  schema_name  text   NOT NULL,
  created_at   bigint NOT NULL,
  last_used_at bigint NOT NULL)`

/**
 * One schema per tenant, and a registry table (`sandbox_tenants`) in DATABASE_URL's schema that
 * every instance shares. A tenant is deleted by one transaction that deletes its row only while it
 * is still idle and drops its schema: an instance recording a use at the same time either keeps it
 * or, after the drop, makes it anew.
 */
export async function createPostgresTenants (options: PostgresTenantOptions): Promise<TenantBackend> {
  const target = parsePostgresUrl(options.url)
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    application_name: 'plant-store sandbox',
    max: 2,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    ...statementBounds(options.statementTimeoutMs ?? 5000)
  })
  pool.on('error', (err) => { options.onIdleError?.(err) })
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 34))', [`plant-store sandbox ${target.schema ?? ''}`])
    if (target.schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${target.schema}`)
    await client.query(REGISTRY)
    await client.query('CREATE INDEX IF NOT EXISTS sandbox_tenants_last_used ON sandbox_tenants (last_used_at)')
    await client.query('COMMIT')
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    client.release()
    await pool.end()
    throw err
  }
  client.release()
  const schemaOf = (key: string): string => tenantSchema(target.schema, key)
  const tenantUrl = (key: string): string => {
    const url = new URL(options.url)
    url.searchParams.set('schema', schemaOf(key))
    return url.toString()
  }
  return {
    persistent: true,
    shared: true,
    exists: async (key) => (await pool.query('SELECT 1 FROM sandbox_tenants WHERE key = $1', [key])).rowCount === 1,
    touch: async (key, now) => {
      const { rows } = await pool.query<{ inserted: boolean }>(
        `INSERT INTO sandbox_tenants (key, schema_name, created_at, last_used_at) VALUES ($1, $2, $3, $3)
         ON CONFLICT (key) DO UPDATE SET last_used_at = greatest(sandbox_tenants.last_used_at, excluded.last_used_at)
         RETURNING (xmax = 0) AS inserted`, [key, schemaOf(key), now])
      return rows[0]?.inserted === true
    },
    open: async (key) => await createPostgresStore({
      url: tenantUrl(key),
      poolMax: 1,
      webhookPoolMax: 1,
      listen: false,
      ...(options.connectTimeoutMs !== undefined && { connectTimeoutMs: options.connectTimeoutMs }),
      ...(options.statementTimeoutMs !== undefined && { statementTimeoutMs: options.statementTimeoutMs }),
      ...(options.onIdleError !== undefined && { onIdleError: options.onIdleError })
    }),
    count: async () => Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM sandbox_tenants')).rows[0]?.n ?? 0),
    leastRecentlyUsed: async (before, limit) =>
      (await pool.query<{ key: string }>('SELECT key FROM sandbox_tenants WHERE last_used_at < $1 ORDER BY last_used_at, key LIMIT $2', [before, limit])).rows.map((row) => row.key),
    remove: async (key, before) => {
      const remover = await pool.connect()
      let broken: Error | undefined
      try {
        await remover.query('BEGIN')
        const { rows } = await remover.query<{ schema_name: string }>('DELETE FROM sandbox_tenants WHERE key = $1 AND last_used_at < $2 RETURNING schema_name', [key, before])
        const schema = rows[0]?.schema_name
        if (schema !== undefined && !/^sbx_[0-9a-f]{40}$/.test(schema)) throw new Error(`sandbox_tenants names an unexpected schema for ${key}`)
        if (schema !== undefined) await remover.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
        await remover.query('COMMIT')
        return schema !== undefined
      } catch (err) {
        await remover.query('ROLLBACK').catch((rollbackErr: unknown) => { broken = rollbackErr as Error })
        throw err
      } finally {
        remover.release(broken)
      }
    },
    close: async () => { await pool.end() }
  }
}
