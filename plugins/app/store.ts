import fp from 'fastify-plugin'
import { instrumentStore, type OperationObserver } from '../../src/store/instrumented.js'
import { isPostgresUrl } from '../../src/store/postgres/connection.js'
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js'
import type { Store } from '../../src/store/store.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
  }
}

/** Opens the store named by DATABASE_URL; with metrics or tracing off the routes get the bare store. */
export default fp(async function storePlugin (app) {
  const { config, metrics, tracing } = app
  const store = isPostgresUrl(config.databaseUrl)
    // Loaded only when used: see docs/performance.md#what-the-measurements-decided.
    ? await (await import('../../src/store/postgres/postgres-store.js')).createPostgresStore({
      url: config.databaseUrl,
      poolMax: config.pgPoolMax,
      connectTimeoutMs: config.pgConnectTimeoutMs,
      statementTimeoutMs: config.pgStatementTimeoutMs,
      onIdleError: (err) => { app.log.warn({ err }, 'an idle database connection failed; it is replaced on next use') },
      startup: {
        timeoutMs: config.pgStartupTimeoutMs,
        onRetry: (err, attempt, delayMs) => {
          app.log.warn({ err: { message: err.message, code: (err as { code?: unknown }).code }, attempt, delayMs }, 'the database cannot be reached yet; retrying')
        }
      }
    })
    : createSqliteStore({
      filename: config.databaseUrl,
      synchronous: config.sqliteSynchronous,
      log: app.log,
      ...(metrics !== undefined && {
        onCommit: metrics.groupCommit,
        onSync: metrics.walSync,
        checkpoint: { onCheckpoint: (report) => { metrics.walCheckpoint(report.thread, report.durationMs) } }
      })
    })
  const observers = [metrics?.storeOperation, tracing?.storeOperation].filter((observer): observer is OperationObserver => observer !== undefined)
  app.decorate('store', instrumentStore(store, observers))
  app.addHook('onClose', async () => { await store.close() })
}, { name: 'store', dependencies: ['config', 'metrics', 'tracing'] })
