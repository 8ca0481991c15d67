import fp from 'fastify-plugin'
import { DatabaseWatch } from '../../src/store/database-watch.js'
import { isPostgresUrl } from '../../src/store/postgres/connection.js'
import { databaseMetrics } from './metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Whether the database answers (the readiness probe), told in the log once per change. */
    databaseWatch: DatabaseWatch
  }
}

/** Past it, a scrape reports the last state found: a full pool queues the probe behind the requests. */
const SCRAPE_PROBE_WAIT_MS = 1000

async function probedWithin (watch: DatabaseWatch, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const waited = new Promise<boolean>((resolve) => { timer = setTimeout(() => { resolve(watch.up) }, ms) })
  try {
    return await Promise.race([watch.probe().then(() => true, () => false), waited])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The one database probe: readiness, /health and `plantstore_database_up` run it, and a request failed by an
 * unavailable database asks it again, so an outage is logged as it starts and ends.
 */
export default fp(async function databaseWatchPlugin (app) {
  const watch = new DatabaseWatch({
    // A sandbox's new tenants need its registry (and room on its disk) as well (registered later: read when run).
    probe: async () => {
      await app.store.ping()
      await app.sandbox?.registry.ping()
    },
    log: app.log
  })
  app.decorate('databaseWatch', watch)
  if (app.metrics !== undefined) {
    const up = async (): Promise<boolean> => await probedWithin(watch, SCRAPE_PROBE_WAIT_MS)
    databaseMetrics(app.metrics, {
      up,
      // What /health/ready checks (plugins/routes/health.ts), in its order; the probe is shared with `up`.
      ready: async () => !app.draining && !app.isUnderPressure() && await up(),
      ...(isPostgresUrl(app.config.databaseUrl) && {
        pools: () => [...app.store.poolStats?.() ?? [], ...app.sandbox?.registry.poolStats() ?? []]
      })
    })
  }
  // Before the store closes: no probe of a closing store is taken for an outage.
  app.addHook('preClose', async () => { watch.close() })
}, { name: 'database-watch', dependencies: ['config', 'store', 'metrics', 'connections', 'under-pressure'] })
