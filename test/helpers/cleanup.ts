/** Something that runs cleanups when a test ends, like a TestContext. */
export interface Cleanup {
  after: (fn: () => unknown) => void
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
