import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** What a helper needs of a test to clean up after it: `t.after` (every TestContext has it). */
export interface Cleanup {
  after: (fn: () => unknown) => void
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

/**
 * Cleanups that run last in, first out, from one hook of the test: node:test (Node 20) runs a
 * test's own `after` hooks in the order they were registered, which would drop a scratch schema
 * or delete a database file while the stores, dispatchers and listeners on it are still running.
 * Register everything through the returned `after` (helpers accept it in place of `t`). Every
 * cleanup runs even if one fails; the first failure is rethrown.
 */
export function cleanupStack (t: { after: (fn: () => Promise<void>) => void }): Cleanup {
  const stack: Array<() => unknown> = []
  t.after(async () => {
    let failure: { error: unknown } | undefined
    for (let fn = stack.pop(); fn !== undefined; fn = stack.pop()) {
      try {
        await fn()
      } catch (error) {
        failure ??= { error }
      }
    }
    if (failure !== undefined) throw failure.error
  })
  return { after: (fn) => { stack.push(fn) } }
}
