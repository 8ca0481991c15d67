import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { createSqliteWebhookStore, enqueueSqliteEvent, openSqliteWebhookDatabase } from '../../../src/store/sqlite/webhook-store.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { webhookStoreConformance } from './store-conformance.js'

// A file rather than :memory:, so several connections (instances) can open one database.
webhookStoreConformance('SQLite', async (t) => {
  const cleanup = cleanupStack(t)
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-webhooks-'))
  const filename = join(dir, 'plants.db')
  cleanup.after(() => { rmSync(dir, { recursive: true, force: true }) })
  // The plant store migrates the file (webhook tables included), as it does in the service.
  const plants = createSqliteStore({ filename, synchronous: 'normal' })
  cleanup.after(() => plants.close())
  return {
    open: async () => {
      const store = createSqliteWebhookStore({ db: openSqliteWebhookDatabase(filename), ownsDb: true })
      cleanup.after(() => store.close())
      return store
    },
    enqueueInTransaction: async (event, now, commit) => {
      const db = openSqliteWebhookDatabase(filename)
      try {
        let count = 0
        const write = db.transaction(() => {
          count = enqueueSqliteEvent(db, event, now)
          if (!commit) throw new Error('roll back')
        })
        try {
          write.immediate()
        } catch (err) {
          if (commit) throw err
        }
        return count
      } finally {
        db.close()
      }
    }
  }
})
