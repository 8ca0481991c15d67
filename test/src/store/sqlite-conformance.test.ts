import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { storeConformance } from './conformance.js'

// A file rather than :memory:, so several stores (instances) can open one database.
storeConformance('SQLite', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-conformance-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return async () => {
    const store = createSqliteStore({ filename: join(dir, 'plants.db'), synchronous: 'normal' })
    t.after(() => store.close())
    return store
  }
})
