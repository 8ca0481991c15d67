import fp from 'fastify-plugin'
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.js'
import type { PlantStore } from '../src/store/store.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: PlantStore
  }
}

/** Opens the store named by DATABASE_URL (migrating it) and closes it when the app closes. */
export default fp(async function storePlugin (app) {
  const store = createSqliteStore({ filename: app.config.databaseUrl, synchronous: app.config.sqliteSynchronous })
  app.decorate('store', store)
  app.addHook('onClose', async () => { await store.close() })
}, { name: 'store', dependencies: ['config'] })
