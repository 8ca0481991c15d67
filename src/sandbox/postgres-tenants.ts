import pg from 'pg'
import { sha256 } from '../lib/digest.js'
import {
  inTransaction, isConnectionError, parsePostgresUrl, poolStats, settledPool, tablePrefix, withPostgresFailures
} from '../store/postgres/connection.js'
import { migrations } from '../store/postgres/migrations.js'
import { createTableSql } from '../store/postgres/table-sql.js'
import { allWriteFunctions } from '../store/postgres/write-functions.js'
import type { ResourceDefinition } from '../resources/definition.js'
import { RESOURCES, type ServedResources } from '../resources/index.js'
import { createPostgresStore } from '../store/postgres/postgres-store.js'
import { isCurrentVersion, migrationLock, migrationRowsSql, MIGRATIONS_TABLE } from '../store/postgres/migrate.js'
import { openPool } from '../store/postgres/types.js'
import type { TenantBackend } from './tenants.js'

interface PostgresTenantOptions {
  /** DATABASE_URL: its schema holds the registry; each tenant gets a schema of its own beside it. */
  url: string
  /** PG_POOL_MAX: the tenants share this many connections, and as many for dispatcher bookkeeping. */
  poolMax?: number
  connectTimeoutMs?: number
  statementTimeoutMs?: number
  onIdleError?: (err: Error) => void
  /** What each tenant's store serves (the app's resources): RESOURCES by default. */
  resources?: ServedResources
}

/** Uses after which a shared connection is replaced: a backend caches the catalog of every schema it has used. */
const SHARED_CONNECTION_USES = 2000

/** New schemas made at once, at most half the shared pool: past four, DDL is PostgreSQL's CPU (docs/performance.md). */
const CREATIONS_AT_ONCE = 4

/** A new tenant's schema in one round trip and one transaction, under the migrator's lock. */
function createSchemaSql (schema: string, resources: readonly ResourceDefinition[]): string {
  return [
    `SELECT pg_advisory_xact_lock(hashtextextended('${migrationLock(schema)}', 0))`,
    `CREATE SCHEMA ${schema}`,
    `SELECT set_config('search_path', '${schema}', true)`,
    MIGRATIONS_TABLE,
    ...migrations.map((step) => step.up),
    ...resources.map((resource) => createTableSql(resource, schema)),
    ...allWriteFunctions(resources, schema).map(({ ddl }) => ddl),
    migrationRowsSql(migrations, 0, migrations.length)
  ].join(';\n')
}

/** Digests DATABASE_URL's schema with the key, so two sandboxes on one database never share a schema. */
export const tenantSchema = (mainSchema: string | undefined, key: string): string =>
  `sbx_${sha256(`${mainSchema ?? ''}/${key}`, 'hex').slice(0, 40)}`

const REGISTRY = `CREATE TABLE IF NOT EXISTS sandbox_tenants (
  key          text   PRIMARY KEY,
  schema_name  text   NOT NULL,
  created_at   bigint NOT NULL,
  last_used_at bigint NOT NULL)`

/**
 * One schema per tenant, and a registry (`sandbox_tenants`) in DATABASE_URL's schema that every instance shares.
 * One transaction deletes a tenant's row only while it is idle and drops its schema: a use recorded meanwhile
 * either keeps the tenant or makes it anew.
 */
export async function createPostgresTenants (options: PostgresTenantOptions): Promise<TenantBackend> {
  const target = parsePostgresUrl(options.url)
  const resources = options.resources ?? RESOURCES
  const statementTimeoutMs = options.statementTimeoutMs ?? 5000
  const timeouts = { connectTimeoutMs: options.connectTimeoutMs ?? 5000, statementTimeoutMs }
  const open = (settings: pg.PoolConfig): pg.Pool => openPool({
    connectionString: target.connectionString,
    application_name: 'plant-store sandbox',
    connectionTimeoutMillis: timeouts.connectTimeoutMs,
    ...settings
  }, statementTimeoutMs, options.onIdleError)
  const raw = open({ max: 4 })
  const pool = await openRegistry(raw, target.schema, statementTimeoutMs)
  const sharing = { max: options.poolMax ?? 10, maxUses: SHARED_CONNECTION_USES }
  const shared = open(sharing)
  const bookkeeping = open(sharing)
  const schemaOf = (key: string): string => tenantSchema(target.schema, key)
  const creations = inTurn(Math.max(1, Math.min(CREATIONS_AT_ONCE, Math.floor(sharing.max / 2))))
  const registry = `${tablePrefix(target.schema)}sandbox_tenants`
  return {
    exists: guarded(async (key) =>
      (await pool.query(`SELECT 1 FROM ${registry} WHERE key = $1`, [key])).rowCount === 1),
    touch: guarded(async (key, now) => {
      const { rows } = await pool.query<{ inserted: boolean }>(
        `INSERT INTO ${registry} AS r (key, schema_name, created_at, last_used_at) VALUES ($1, $2, $3, $3)
         ON CONFLICT (key) DO UPDATE SET last_used_at = greatest(r.last_used_at, excluded.last_used_at)
         RETURNING (xmax = 0) AS inserted`, [key, schemaOf(key), now])
      return rows[0]?.inserted === true
    }),
    open: guarded(async (key, created) => {
      const schema = schemaOf(key)
      // False when it could not be made (another instance made it meanwhile): the migrator then looks.
      const current = created
        ? await creations.run(async () =>
          await shared.query(createSchemaSql(schema, resources)).then(() => true, unlessLost))
        : await schemaIsCurrent(shared, schema, resources)
      const url = new URL(options.url)
      url.searchParams.set('schema', schema)
      const store = await createPostgresStore({
        url: url.toString(),
        resources,
        // Each transaction sets its tenant's search_path: a pooled connection (or a pooler's) keeps none for the next.
        pools: {
          pool: settledPool(shared, { schema, statementTimeoutMs }),
          bookkeeping: settledPool(bookkeeping, { schema, statementTimeoutMs, asynchronousCommit: true })
        },
        listen: false,
        ...(current && { migrate: false }),
        ...timeouts
      })
      return { store, created }
    }),
    ping: async () => { await pool.query('SELECT 1') },
    count: guarded(async () =>
      Number((await pool.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${registry}`)).rows[0]?.n ?? 0)),
    leastRecentlyUsed: guarded(async (before, limit) =>
      (await pool.query<{ key: string }>(
        `SELECT key FROM ${registry} WHERE last_used_at < $1 ORDER BY last_used_at, key LIMIT $2`, [before, limit]))
        .rows.map((row) => row.key)),
    remove: guarded(async (key, before) => await inTransaction(pool, async (remover) => {
      const { rows } = await remover.query<{ schema_name: string }>(
        `DELETE FROM ${registry} WHERE key = $1 AND last_used_at < $2 RETURNING schema_name`, [key, before])
      const schema = rows[0]?.schema_name
      if (schema === undefined) return false
      if (!/^sbx_[0-9a-f]{40}$/.test(schema)) throw new Error(`sandbox_tenants names an unexpected schema for ${key}`)
      await remover.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      return true
    })),
    close: async () => { await Promise.all([pool.end(), shared.end(), bookkeeping.end()]) },
    poolStats: () => [
      poolStats('sandbox', shared), poolStats('sandbox-dispatcher', bookkeeping), poolStats('sandbox-registry', raw)
    ]
  }
}

/** A failed statement is false, but a lost connection stays an error. */
function unlessLost (err: unknown): false {
  if (isConnectionError(err)) throw err
  return false
}

/** Whether the schema is this code's version with every resource's table and function (else the store migrates it). */
async function schemaIsCurrent (
  shared: pg.Pool, schema: string, resources: readonly ResourceDefinition[]
): Promise<boolean> {
  const tables = [
    ...resources.map(({ collection }) => `to_regclass('${schema}.${collection}') IS NOT NULL`),
    // A tenant made by the release before has no write functions yet: migrating makes them.
    ...allWriteFunctions(resources, schema).map(({ name }) => `to_regproc('${name}') IS NOT NULL`)
  ]
  const found = await shared.query<{ version: number | null, tables: boolean }>(
    `SELECT max(version) AS version, ${['true', ...tables].join(' AND ')} AS tables
     FROM ${schema}.plant_store_migrations`
  ).then(({ rows }) => rows[0], unlessLost)
  return found !== false && isCurrentVersion(found?.version ?? 0) && found?.tables === true
}

/** The registry's pool; the table is made when missing, under a lock every instance takes. */
async function openRegistry (
  raw: pg.Pool, schema: string | undefined, statementTimeoutMs: number
): Promise<pg.Pool> {
  const pool = settledPool(raw, { schema, statementTimeoutMs })
  try {
    await inTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 34))', [
        `plant-store sandbox ${schema ?? ''}`
      ])
      if (schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
      await client.query(REGISTRY)
      await client.query('CREATE INDEX IF NOT EXISTS sandbox_tenants_last_used ON sandbox_tenants (last_used_at)')
    })
  } catch (err) {
    await pool.end()
    throw err
  }
  return pool
}

/** A lost or refused database is `unavailable` (a 503), whichever of the backend's operations met it. */
function guarded<A extends unknown[], R> (operation: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return (...args) => withPostgresFailures(() => operation(...args))
}

/** Runs at most `limit` tasks at once, the others in the order they came. */
function inTurn (limit: number): { run: <T>(task: () => Promise<T>) => Promise<T> } {
  let running = 0
  const waiting: Array<() => void> = []
  return {
    async run (task) {
      if (running >= limit) await new Promise<void>((resolve) => { waiting.push(resolve) })
      else running++
      try {
        return await task()
      } finally {
        const next = waiting.shift()
        if (next === undefined) running--
        else next()
      }
    }
  }
}
