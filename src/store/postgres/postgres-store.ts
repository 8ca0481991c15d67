import pg from 'pg'
import { pgTypes } from './types.js'
import { StoreOpenError } from '../../errors.js'
import { newerSchemaProblem, type Store } from '../contract.js'
import {
  parsePostgresUrl, postgresFailure, queryTimeout, settledPool, survivingDisconnects, type PostgresTarget
} from './connection.js'
import { migrations } from './migrations.js'
import type { PostgresRepositoryContext } from './context.js'
import { createPostgresRepository } from './repository.js'
import { ensureResourceTables } from './table-sql.js'
import { ensureWriteFunctions } from './write-functions.js'
import { retryUntilReachable, type StartupRetry } from './startup.js'
import { createPostgresWebhookStore, postgresEnqueuer } from './webhook-store.js'
import type { WebhookStore } from '../../webhooks/store-contract.js'
import { postgresTrim } from './trim.js'
import type { RepositoriesOf, ResourceDefinition } from '../../resources/definition.js'
import { RESOURCES, type ServedResources } from '../../resources/index.js'

/** At most one NOTIFY to other instances' dispatchers per this many milliseconds from one process's writes. */
export const NOTIFY_INTERVAL_MS = 50

export interface PostgresStoreOptions<D extends readonly ResourceDefinition[] = ServedResources> {
  url: string
  /** The resources it serves: their tables are made when missing. */
  resources?: D
  /**
   * DATABASE_DIRECT_URL: PostgreSQL itself, not a transaction pooler, for what needs a session
   * (LISTEN; migrations). Without it there is no LISTEN (the dispatcher polls) and migrations run
   * over `url`, under a transaction-scoped lock.
   */
  directUrl?: string
  poolMax?: number
  connectTimeoutMs?: number
  /** statement_timeout and lock_timeout of every transaction, and the driver's bound on every statement. */
  statementTimeoutMs?: number
  onIdleError?: (err: Error) => void
  startup?: StartupRetry
  notifyIntervalMs?: number
  /** Max connections of each of the webhook store's two pools (4 by default). */
  webhookPoolMax?: number
  /**
   * `false`: no LISTEN connection even with `directUrl`; only this process's own writes wake the
   * dispatcher (it polls for the rest).
   */
  listen?: boolean
  /** Pools the caller owns and ends (a sandbox's): `bookkeeping` has synchronous_commit off, for the dispatcher. */
  pools?: { pool: pg.Pool, bookkeeping: pg.Pool }
  /** `false`: the caller has made sure the schema is this code's (no migration, no schema check). */
  migrate?: false
}

/** Whoever migrates a schema holds this advisory lock (of a session, or of a transaction). */
export const migrationLock = (schema: string | undefined): string => `plant-store migrations ${schema ?? ''}`

export const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS plant_store_migrations (
  version    integer     PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now())`

/** Whether a schema at `version` is this code's; one that a newer release migrated is refused, never touched. */
export function isCurrentVersion (version: number): boolean {
  if (version > migrations.length) throw new StoreOpenError(newerSchemaProblem(version, migrations.length))
  return version === migrations.length
}

/**
 * Several instances starting together queue on an advisory lock, so each step runs exactly once.
 * One transaction holds the lock and every step: a transaction pooler keeps a transaction on one
 * server session (a session lock could be taken on one and released on another), and a failed
 * step leaves the schema as it was.
 */
async function migrate (
  client: pg.Client, target: PostgresTarget, resources: readonly ResourceDefinition[]
): Promise<void> {
  try {
    await client.query('BEGIN')
    try {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [migrationLock(target.schema)])
      if (target.schema !== undefined) {
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${target.schema}`)
        await client.query(`SELECT set_config('search_path', '${target.schema}', true)`)
      }
      await client.query(MIGRATIONS_TABLE)
      const { rows } = await client.query<{ version: number | null }>(
        'SELECT max(version) AS version FROM plant_store_migrations')
      const version = rows[0]?.version ?? 0
      isCurrentVersion(version)
      for (let step = version; step < migrations.length; step++) {
        await client.query(migrations[step] as string)
        await client.query('INSERT INTO plant_store_migrations (version) VALUES ($1)', [step + 1])
      }
      await ensureResourceTables(client, resources, target.schema)
      await ensureWriteFunctions(client, resources, target.schema)
      await client.query('COMMIT')
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    }
  } finally {
    await client.end()
  }
}

/** Migrations run without the statement bounds (a step may take a while); an unreachable database
 * is retried for PG_STARTUP_TIMEOUT_MS, so a service and its database can start together. */
async function migrateWhenReachable (
  options: PostgresStoreOptions<readonly ResourceDefinition[]>, connection: pg.ClientConfig, target: PostgresTarget,
  resources: readonly ResourceDefinition[]
): Promise<void> {
  await retryUntilReachable(async () => {
    const migrator = new pg.Client(connection)
    // A connection lost mid-migration fails the statement (retried); unheard, its 'error' would end the process.
    migrator.on('error', () => {})
    try {
      await migrator.connect()
    } catch (err) {
      await migrator.end().catch(() => {})
      throw err
    }
    try {
      await migrate(migrator, target, resources)
    } catch (err) {
      // Another instance made the schema at the same moment (seen behind PgBouncer): it is there now.
      if (!['23505', '42P06'].includes(String((err as { code?: unknown }).code))) throw err
      const again = new pg.Client(connection)
      again.on('error', () => {})
      await again.connect()
      await migrate(again, target, resources)
    }
  }, options.startup ?? { timeoutMs: 0 })
}

/** What every repository of the store shares: the pool, the failure mapping and the NOTIFY throttle. */
function repositoryContext (
  pool: pg.Pool, schema: string | undefined, notifyIntervalMs: number, wakers: ReadonlySet<() => void>
): PostgresRepositoryContext {
  // At most one NOTIFY per NOTIFY_INTERVAL_MS, as notifying commits serialize on PostgreSQL's queue
  // lock: see docs/performance.md#what-the-measurements-decided. Own dispatchers are woken directly.
  let lastNotifyAt = Number.NEGATIVE_INFINITY
  return {
    pool,
    schema,
    enqueue: postgresEnqueuer(schema),
    async guard (work) {
      try {
        return await work()
      } catch (err) {
        throw postgresFailure(err) ?? err
      }
    },
    // Claimed before the commit; one that then rolls back costs other instances at most a poll interval.
    claimNotify (now) {
      const notify = now - lastNotifyAt >= notifyIntervalMs
      if (notify) lastNotifyAt = now
      return notify
    },
    afterCommit (result, deliveries) {
      if (deliveries > 0) for (const wake of wakers) wake()
      return result
    }
  }
}

/** The webhook store on its own pools, its listeners also woken by this process's own writes. */
async function openWebhooks (
  options: PostgresStoreOptions<readonly ResourceDefinition[]>, statementTimeoutMs: number, wakers: Set<() => void>
): Promise<WebhookStore> {
  const remote = await createPostgresWebhookStore({
    url: options.url,
    statementTimeoutMs,
    ...(options.pools !== undefined && { pools: options.pools }),
    ...(options.migrate === false && { checkSchema: false }),
    ...(options.webhookPoolMax !== undefined && { poolMax: options.webhookPoolMax }),
    ...(options.connectTimeoutMs !== undefined && { connectTimeoutMs: options.connectTimeoutMs }),
    ...(options.onIdleError !== undefined && { onError: options.onIdleError }),
    ...(options.directUrl !== undefined && options.listen !== false && { listenUrl: options.directUrl })
  })
  const listenRemote = remote.listen
  return {
    ...remote,
    listen: async (wake) => {
      wakers.add(wake)
      const unlisten = await listenRemote?.(wake)
      return async () => {
        wakers.delete(wake)
        await unlisten?.()
      }
    }
  }
}

/** The shared store: any number of stateless instances can serve one database. */
export async function createPostgresStore<D extends readonly ResourceDefinition[] = ServedResources> (
  options: PostgresStoreOptions<D>
): Promise<Store<D>> {
  const resources: readonly ResourceDefinition[] = options.resources ?? RESOURCES
  const target = parsePostgresUrl(options.url)
  const connection = {
    connectionString: target.connectionString,
    application_name: 'plant-store',
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000
  }
  if (options.migrate !== false) {
    const migrator = options.directUrl === undefined
      ? connection
      : { ...connection, connectionString: parsePostgresUrl(options.directUrl).connectionString }
    await migrateWhenReachable(options, migrator, target, resources)
  }
  const statementTimeoutMs = options.statementTimeoutMs ?? 5000
  const owned = options.pools === undefined
  const pool = options.pools?.pool ?? settledPool(
    survivingDisconnects(
      new pg.Pool({ ...connection, max: options.poolMax ?? 10, ...queryTimeout(statementTimeoutMs), types: pgTypes }),
      options.onIdleError),
    { schema: target.schema, statementTimeoutMs })
  const wakers = new Set<() => void>()
  const context = repositoryContext(pool, target.schema, options.notifyIntervalMs ?? NOTIFY_INTERVAL_MS, wakers)
  const trim = postgresTrim(pool, target.schema, resources)
  let webhooks: WebhookStore
  try {
    webhooks = await openWebhooks(options, statementTimeoutMs, wakers)
  } catch (err) {
    if (owned) await pool.end()
    throw postgresFailure(err) ?? err
  }
  let closed = false
  // Keyed by collection, as RepositoriesOf<D> says: the one map TypeScript cannot follow.
  const repositories = Object.fromEntries(
    resources.map((definition) => [definition.collection, createPostgresRepository(definition, context)])
  ) as RepositoriesOf<D>
  return {
    ...repositories,
    webhooks,
    async ping () {
      await context.guard(async () => { await pool.query('SELECT 1') })
    },
    trim: async (limits) => { await context.guard(async () => { await trim(limits) }) },
    async close () {
      if (closed) return
      closed = true
      await webhooks.close()
      if (owned) await pool.end()
    }
  }
}
