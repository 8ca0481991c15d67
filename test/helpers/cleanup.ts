import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** What a helper needs of a test to clean up after it: `t.after` (every TestContext has it). */
export interface Cleanup {
  after: (fn: () => void | Promise<void>) => void
}

/**
 * The path of a SQLite file (not created) in a fresh temporary directory that is removed when the
 * test ends: for tests that open one database several times (restarts, several instances).
 */
export function tempDatabaseFile (t: Cleanup, prefix = 'plant-store-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return join(dir, 'plants.db')
}
