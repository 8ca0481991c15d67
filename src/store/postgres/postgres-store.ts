import pg from 'pg'
import { openPool } from './types.js'
import type { Store } from '../contract.js'
import { ReadOnlyDatabaseError, schemaUnavailable } from '../../lib/errors.js'
import { incompatibleSchemaProblem, type MigrationReport } from '../migration.js'
import { parsePostgresUrl, poolStats, postgresFailure, settledPool, withPostgresFailures } from './connection.js'
import { migrateWhenReachable, schemaProbeSql } from './migrate.js'
import { migrations } from './migrations.js'
import { createPostgresRepository, type PostgresRepositoryContext } from './repository.js'
import { retryUntilReachable, type StartupRetry } from './startup.js'
import { assertSameDatabase } from './same-database.js'
import { createPostgresWebhookStore, postgresEnqueuer } from './webhook-store.js'
import type { WebhookStore } from '../../webhooks/store-contract.js'
import { postgresTrim } from './trim.js'
import type { RepositoriesOf, ResourceDefinition } from '../../resources/definition.js'
import { RESOURCES, type ServedResources } from '../../resources/index.js'

interface SchemaProbe { tables: boolean, version: number, compatible_from: number | null }

/** At most one NOTIFY to other instances' dispatchers per this many milliseconds from one process's writes. */
const NOTIFY_INTERVAL_MS = 50

export interface PostgresStoreOptions<D extends readonly ResourceDefinition[] = ServedResources> {
  url: string
  /** Their tables are made when missing. */
  resources?: D
  /** DATABASE_DIRECT_URL: no pooler, for LISTEN and migrations (else: no LISTEN, a transaction-scoped lock). */
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
  /** `false`: no LISTEN even with `directUrl`; the dispatcher polls for other instances' events. */
  listen?: boolean
  /** Pools the caller owns and ends (a sandbox's): `bookkeeping` has synchronous_commit off, for the dispatcher. */
  pools?: { pool: pg.Pool, bookkeeping: pg.Pool }
  /** `false`: the caller made sure of the schema; `'check'`: refuse one behind this code's (MIGRATE_ON_START=0). */
  migrate?: false | 'check'
}

function repositoryContext (
  pool: pg.Pool, schema: string | undefined, { notifyIntervalMs, waitMs }: { notifyIntervalMs: number, waitMs: number },
  wakers: ReadonlySet<() => void>
): PostgresRepositoryContext {
  // Notifying commits serialize on a queue lock (docs/performance.md#what-the-measurements-decided).
  let lastNotifyAt = Number.NEGATIVE_INFINITY
  return {
    pool,
    schema,
    waitMs,
    enqueue: postgresEnqueuer(schema),
    guard: withPostgresFailures,
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
  if (options.directUrl !== undefined && options.pools === undefined) {
    const directUrl = options.directUrl
    await retryUntilReachable(async () => { await assertSameDatabase(connection, options.url, directUrl) },
      options.startup ?? { timeoutMs: 0 })
  }
  const known = migrations.length
  let migration: MigrationReport = { from: known, version: known, known, applied: [] }
  if (options.migrate !== false) {
    const migrator = options.directUrl === undefined
      ? connection
      : { ...connection, connectionString: parsePostgresUrl(options.directUrl).connectionString }
    migration = await migrateWhenReachable(migrator, target, resources,
      { apply: options.migrate !== 'check', startup: options.startup })
  }
  const statementTimeoutMs = options.statementTimeoutMs ?? 5000
  let own: pg.Pool | undefined
  let pool: pg.Pool
  if (options.pools === undefined) {
    own = openPool({ ...connection, max: options.poolMax ?? 10 }, statementTimeoutMs, options.onIdleError)
    pool = settledPool(own, { schema: target.schema, statementTimeoutMs })
  } else pool = options.pools.pool
  const probe = schemaProbeSql(target.schema, resources)
  const wakers = new Set<() => void>()
  const context = repositoryContext(pool, target.schema, {
    notifyIntervalMs: options.notifyIntervalMs ?? NOTIFY_INTERVAL_MS, waitMs: connection.connectionTimeoutMillis
  }, wakers)
  const trim = postgresTrim(pool, target.schema, resources)
  let webhooks: WebhookStore
  try {
    webhooks = await openWebhooks(options, statementTimeoutMs, wakers)
  } catch (err) {
    if (own !== undefined) await pool.end()
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
    migration,
    async ping () {
      await context.guard(async () => {
        // A standby or demoted primary answers reads but refuses every write (25006): not ready.
        const { rows: [state] } = await pool.query<{ read_only: string }>(
          "SELECT current_setting('transaction_read_only') AS read_only")
        if (state?.read_only === 'on') throw new ReadOnlyDatabaseError()
        // The schema too, once the database answers (a sandbox tenant's is its registry's to check).
        if (options.migrate === false) return
        const { rows: [found] } = await pool.query<SchemaProbe>(probe)
        if (found?.tables !== true || (found.version > known && (found.compatible_from ?? Infinity) > known)) {
          throw schemaUnavailable(new Error(found?.tables === true
            ? incompatibleSchemaProblem(found.version, known, found.compatible_from)
            : 'a table this code uses is missing'))
        }
      })
    },
    trim: async (limits) => { await context.guard(async () => { await trim(limits) }) },
    // A sandbox tenant's pools are the sandbox's, which reports them.
    poolStats: () => [...own === undefined ? [] : [poolStats('api', own)], ...webhooks.poolStats?.() ?? []],
    async close () {
      if (closed) return
      closed = true
      await webhooks.close()
      if (own !== undefined) await pool.end()
    }
  }
}
