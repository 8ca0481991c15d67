import Database from 'better-sqlite3'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { tempDatabaseFile } from '../../helpers/cleanup.js'
import { setIdSequence } from '../../helpers/id-sequence.js'
import { storeConformance } from './conformance.js'

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
