import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js'
import { createSqliteWebhookStore, openSqliteWebhookDatabase } from '../../src/store/sqlite/webhook-store.js'
import type { WebhookStore } from '../../src/webhooks/store-contract.js'
import { tempDatabaseFile, type Cleanup } from './cleanup.js'

/**
 * A fresh SQLite file that the plant store has migrated (webhook tables included, as in the
 * service), and `openWebhookStore()`: a webhook store on a connection of its own to it, as another
 * instance would have. `cleanup` should be last in, first out (cleanupStack): stores close before
 * the file goes.
 */
export function sqliteWebhookDatabase (cleanup: Cleanup,
  prefix: string): { filename: string, openWebhookStore: () => WebhookStore } {
  const filename = tempDatabaseFile(cleanup, prefix)
  const plants = createSqliteStore({ filename, synchronous: 'normal' })
  cleanup.after(() => plants.close())
  return {
    filename,
    openWebhookStore: () => {
      const store = createSqliteWebhookStore({ db: openSqliteWebhookDatabase(filename), ownsDb: true })
      cleanup.after(() => store.close())
      return store
    }
  }
}
