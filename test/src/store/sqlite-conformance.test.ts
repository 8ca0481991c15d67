import Database from 'better-sqlite3'
import { enqueueSqliteEvent } from '../../../src/store/sqlite/outbox.js'
import { openSqliteWebhookDatabase } from '../../../src/store/sqlite/webhook-store.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { cleanupStack, tempDatabaseFile } from '../../helpers/cleanup.js'
import { setIdSequence } from '../../helpers/id-sequence.js'
import { webhookStoreConformance } from '../webhooks/store-conformance.js'
import { storeConformance } from './conformance.js'
import { PLANTS_UNDER_TEST, resourceConformance } from './resource-conformance.js'

// A file rather than :memory:, so several stores (instances) can open one database.
storeConformance('SQLite', async (t) => {
  const filename = tempDatabaseFile(t, 'plant-store-conformance-')
  return {
    open: async () => {
      const store = createSqliteStore({ filename, synchronous: 'normal' })
      t.after(() => store.close())
      return store
    },
    ageIdempotencyKeys: async (ms) => {
      const db = new Database(filename)
      try {
        db.prepare('UPDATE idempotency_keys SET created_at = created_at - ?').run(ms)
      } finally {
        db.close()
      }
    },
    setIdSequence: async (last) => { await setIdSequence(filename, last) }
  }
})

resourceConformance('SQLite', PLANTS_UNDER_TEST, async (t) => {
  const filename = tempDatabaseFile(t, 'plant-store-resource-')
  return {
    open: async () => {
      const store = createSqliteStore({ filename, synchronous: 'normal' })
      t.after(() => store.close())
      return { repository: store.plants, webhooks: store.webhooks, close: store.close }
    }
  }
})

// The webhooks repository of the same store, on a file several stores (instances) open.
webhookStoreConformance('SQLite', async (t) => {
  const cleanup = cleanupStack(t)
  const filename = tempDatabaseFile(cleanup, 'plant-store-webhooks-')
  return {
    open: async () => {
      const store = createSqliteStore({ filename, synchronous: 'normal' })
      cleanup.after(() => store.close())
      return store.webhooks
    },
    enqueueInTransaction: async (event, now, commit) => {
      const db = openSqliteWebhookDatabase(filename)
      try {
        // What the event fans out to, counted inside the transaction that wrote it.
        const receivers = db.prepare<[string], bigint>(
          'SELECT count(*) FROM webhook_events e JOIN webhook_subscriptions s ON s.disabled = 0 AND s.first_event_id ' +
            '<= e.id AND instr(s.events, ?) > 0').pluck()
        let count = 0
        const write = db.transaction(() => {
          enqueueSqliteEvent(db, event, now)
          count = Number(receivers.get(event.type))
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
