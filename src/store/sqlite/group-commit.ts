import type Database from 'better-sqlite3'

interface PendingWrite {
  run: () => unknown
  resolve: (value: unknown) => void
  reject: (reason: unknown) => void
}

type Outcome = { ok: true, value: unknown } | { ok: false, error: unknown }

/** Runs writes in one shared transaction; each write is given as a better-sqlite3 transaction function. */
export interface GroupCommit {
  /**
   * Queues `write` for the next batch and resolves with what it returned once the batch's COMMIT
   * has returned (so, under synchronous=FULL, once it is on disk). `write` must be a
   * `db.transaction(...)` function: inside the batch it runs as a SAVEPOINT, so when it throws only
   * its own changes are undone and its neighbours commit as if it had never run.
   */
  enqueue: <T>(write: () => T) => Promise<T>
  /** Commits whatever is queued now (before closing the database). */
  flush: () => void
}

/**
 * Group commit: every write that arrives in the same event-loop turn (the I/O phase that parsed a
 * burst of requests) joins one transaction, committed in `setImmediate`: one WAL append and, under
 * synchronous=FULL, one fsync for the whole burst instead of one per request. The database calls
 * are synchronous, so a write arriving while a batch commits simply waits for the next turn.
 * Results are handed back in the order the writes were queued. `onCommit` sees the size of each
 * committed batch (tests count transactions with it).
 */
export function createGroupCommit (db: Database.Database, onCommit?: (writes: number) => void): GroupCommit {
  let queue: PendingWrite[] = []
  let scheduled = false

  const runBatch = db.transaction((writes: readonly PendingWrite[]): Outcome[] => {
    const outcomes: Outcome[] = []
    for (const write of writes) {
      try {
        outcomes.push({ ok: true, value: write.run() })
      } catch (error) {
        // An error SQLite answers by rolling back the whole transaction (disk full, I/O) fails
        // the batch: nothing of it committed. Any other failure was undone at its savepoint.
        if (!db.inTransaction) throw error
        outcomes.push({ ok: false, error })
      }
    }
    return outcomes
  })

  const flush = (): void => {
    scheduled = false
    const writes = queue
    queue = []
    if (writes.length === 0) return
    let outcomes: Outcome[]
    try {
      outcomes = runBatch.immediate(writes)
    } catch (error) {
      for (const write of writes) write.reject(error)
      return
    }
    onCommit?.(writes.length)
    writes.forEach((write, index) => {
      const outcome = outcomes[index] as Outcome
      if (outcome.ok) write.resolve(outcome.value)
      else write.reject(outcome.error)
    })
  }

  return {
    enqueue: <T>(run: () => T) => new Promise<T>((resolve, reject) => {
      queue.push({ run, resolve: resolve as (value: unknown) => void, reject })
      if (!scheduled) {
        scheduled = true
        setImmediate(flush)
      }
    }),
    flush
  }
}
