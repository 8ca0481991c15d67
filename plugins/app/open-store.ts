import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { StoreOpenError } from '../../src/lib/errors.js'
import { instrumentStore } from '../../src/store/instrumented.js'
import { isPostgresUrl } from '../../src/store/postgres/connection.js'
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js'
import type { Store } from '../../src/store/contract.js'
import { migrationLines } from '../../src/store/migration.js'
import { METRIC_PREFIX } from './metrics.js'
import type { ServedResources } from '../../src/resources/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
  }
}

/** The store observed by metrics and tracing, where they are on; else the bare store. */
export function instrumented (app: FastifyInstance, store: Store): Store {
  const observers = [app.metrics?.storeOperation, app.tracing?.storeOperation]
  return instrumentStore(store, observers.filter((observer) => observer !== undefined), app.resources)
}

/** The app's resources typed as the default list: routes reach each repository by its collection. */
export const servedResources = (app: FastifyInstance): ServedResources => app.resources as ServedResources

/** The PostgreSQL store; a start it cannot make is logged with the server's reason before it stops the process. */
async function openPostgres (app: FastifyInstance): Promise<Store> {
  const { config } = app
  try {
    // Loaded only when used: see docs/performance.md#what-the-measurements-decided.
    return await (await import('../../src/store/postgres/postgres-store.js')).createPostgresStore({
      url: config.databaseUrl,
      resources: servedResources(app),
      ...(config.databaseDirectUrl !== undefined && { directUrl: config.databaseDirectUrl }),
      ...(!config.migrateOnStart && { migrate: 'check' as const }),
      poolMax: config.pgPoolMax,
      connectTimeoutMs: config.pgConnectTimeoutMs,
      statementTimeoutMs: config.pgStatementTimeoutMs,
      onIdleError: (err) => { app.log.warn({ err }, 'an idle database connection failed; it is replaced on next use') },
      startup: {
        timeoutMs: config.pgStartupTimeoutMs,
        onRetry: (err, attempt, delayMs) => {
          app.log.warn(
            { err: { message: err.message, code: (err as { code?: unknown }).code }, attempt, delayMs },
            'the database cannot be reached yet; retrying'
          )
        }
      }
    })
  } catch (err) {
    if (err instanceof StoreOpenError) {
      app.log.error({ err: { message: err.message, code: (err.cause as { code?: unknown } | undefined)?.code } },
        'cannot use the PostgreSQL database')
    }
    throw err
  }
}

/** Opens the store named by DATABASE_URL; with metrics or tracing off the routes get the bare store. */
export default fp(async function storePlugin (app) {
  const { config, metrics } = app
  const store = isPostgresUrl(config.databaseUrl)
    ? await openPostgres(app)
    : createSqliteStore({
      filename: config.databaseUrl,
      resources: servedResources(app),
      synchronous: config.sqliteSynchronous,
      alone: true,
      ...(!config.migrateOnStart && { migrate: 'check' as const }),
      log: app.log,
      ...(metrics !== undefined && {
        onCommit: metrics.groupCommit,
        onSync: metrics.walSync,
        checkpoint: { onCheckpoint: (report) => { metrics.walCheckpoint(report.thread, report.durationMs) } }
      })
    })
  for (const line of migrationLines(store.migration)) app.log.info({ schemaVersion: store.migration.version }, line)
  if (metrics !== undefined) {
    new metrics.client.Gauge({
      name: `${METRIC_PREFIX}schema_version`,
      help: 'The database schema version this instance found, or migrated to, at start',
      registers: [metrics.registry]
    }).set(store.migration.version)
  }
  app.decorate('store', instrumented(app, store))
  app.addHook('onClose', async () => { await store.close() })
}, { name: 'store', dependencies: ['config', 'resources', 'metrics', 'tracing'] })
