import { closeSync, fdatasync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import type Database from 'better-sqlite3'
import { syncPath } from './connection.js'

interface PendingWrite {
  run: () => unknown
  resolve: (value: unknown) => void
  reject: (reason: unknown) => void
  awaitSync: boolean
}

type Outcome = { ok: true, value: unknown } | { ok: false, error: unknown }

interface DurabilityWaiter {
  commit: number
  release: () => void
  fail: (reason: unknown) => void
}

export interface GroupCommitOptions {
  /** Without it (normal, `:memory:`) a write is answered as soon as its COMMIT returned. */
  walFile?: string
  onCommit?: (writes: number) => void
  onSync?: (durationMs: number) => void
  /** Runs before any write of a commit is acknowledged; throwing fails the whole batch. */
  verify?: () => void
  report?: (error: unknown) => unknown
  /** Replaceable so tests can hold a flush without depending on the disk's speed. */
  fdatasync?: (fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => void
}

interface GroupCommit {
  /**
   * A `write` that throws must have changed nothing (one statement, or a `db.transaction`: a SAVEPOINT).
   * `awaitSync: false` is for the dispatcher's bookkeeping, whose loss in a crash only repeats a delivery.
   */
  enqueue: <T>(write: () => T, options?: { awaitSync?: boolean }) => Promise<T>
  /** A read never answers with a write that could still be lost. */
  afterDurable: <T>(value: T) => T | Promise<T>
  close: () => Promise<void>
}

/** A burst committed while one sync runs starts its own, so an answer waits about one flush, not two. */
const MAX_SYNCS_IN_FLIGHT = 3

function openWal (file: string): number {
  const fd = openSync(file, 'r')
  // The WAL's directory entry must be durable too, once (SQLite's FULL does the same).
  syncPath(dirname(file), 'r')
  return fd
}

/** One `fdatasync` of the WAL on libuv's pool makes every commit before it started durable. */
function createDurability ({ walFile, onSync, fdatasync: flushWal = fdatasync }: GroupCommitOptions) {
  let committed = 0
  let synced = 0
  let syncsInFlight = 0
  let requested = 0
  let afterSync: Array<() => void> = []
  let waiters: DurabilityWaiter[] = []
  let failure: { reason: unknown } | undefined
  let walFd: number | undefined

  const settleWaiters = (): void => {
    const ready = failure === undefined ? waiters.filter((waiter) => waiter.commit <= synced) : waiters
    waiters = failure === undefined ? waiters.filter((waiter) => waiter.commit > synced) : []
    for (const waiter of ready) {
      if (failure === undefined) waiter.release()
      else waiter.fail(failure.reason)
    }
  }

  const startSync = (file: string): void => {
    if (syncsInFlight >= MAX_SYNCS_IN_FLIGHT || failure !== undefined || requested >= committed) return
    const target = committed
    requested = target
    syncsInFlight++
    const started = performance.now()
    const done = (error: unknown): void => {
      syncsInFlight--
      // A sync makes durable everything written before it started, whichever sync finishes first.
      if (error === null || error === undefined) synced = Math.max(synced, target)
      else failure ??= { reason: error }
      onSync?.(performance.now() - started)
      settleWaiters()
      const callbacks = afterSync
      afterSync = []
      for (const callback of callbacks) callback()
      startSync(file)
    }
    try {
      walFd ??= openWal(file)
      flushWal(walFd, done)
    } catch (error) {
      done(error)
    }
  }

  const whenDurable = (commit: number, release: () => void, fail: (reason: unknown) => void): void => {
    if (failure !== undefined) fail(failure.reason)
    else if (walFile === undefined || commit <= synced) release()
    else {
      waiters.push({ commit, release, fail })
      startSync(walFile)
    }
  }

  return {
    failure: () => failure,
    committed: (): number => {
      committed++
      if (walFile === undefined) synced = committed
      return committed
    },
    allDurable: () => failure === undefined && synced >= committed,
    whenDurable,
    whenAllDurable: (release: () => void, fail: (reason: unknown) => void) => { whenDurable(committed, release, fail) },
    close: async () => {
      // eslint-disable-next-line no-unmodified-loop-condition
      while (syncsInFlight > 0) await new Promise<void>((resolve) => { afterSync.push(resolve) })
      if (walFd !== undefined) closeSync(walFd)
      walFd = undefined
    }
  }
}

/**
 * Writes of one event-loop turn share a transaction, committed in `setImmediate`; syncs overlap CPU work (SQLite
 * runs at NORMAL). After a failed sync nothing is acknowledged: the page cache's state is unknown.
 */
export function createGroupCommit (db: Database.Database, options: GroupCommitOptions = {}): GroupCommit {
  const { onCommit, verify } = options
  const report = options.report ?? ((error: unknown) => error)
  const durability = createDurability(options)
  let queue: PendingWrite[] = []
  let scheduled = false

  const runBatch = db.transaction((writes: readonly PendingWrite[]): Outcome[] => {
    const outcomes: Outcome[] = []
    for (const write of writes) {
      try {
        outcomes.push({ ok: true, value: write.run() })
      } catch (error) {
        // An error that rolled back the whole transaction fails the batch; others were undone at their savepoint.
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
    const rejectAll = (reason: unknown): void => { for (const write of writes) write.reject(report(reason)) }
    let outcomes: Outcome[]
    let commit: number
    try {
      outcomes = runBatch.immediate(writes)
      commit = durability.committed()
      verify?.()
    } catch (error) {
      rejectAll(error)
      return
    }
    onCommit?.(writes.length)
    const settle = (write: PendingWrite, index: number): void => {
      const outcome = outcomes[index] as Outcome
      if (outcome.ok) write.resolve(outcome.value)
      else write.reject(report(outcome.error))
    }
    writes.forEach((write, index) => { if (!write.awaitSync) settle(write, index) })
    durability.whenDurable(commit, () => {
      writes.forEach((write, index) => { if (write.awaitSync) settle(write, index) })
    }, rejectAll)
  }

  return {
    enqueue: <T>(run: () => T, { awaitSync = true }: { awaitSync?: boolean } = {}) =>
      new Promise<T>((resolve, reject) => {
        const failure = durability.failure()
        if (failure !== undefined) {
          reject(report(failure.reason))
          return
        }
        queue.push({ run, resolve: resolve as (value: unknown) => void, reject, awaitSync })
        if (!scheduled) {
          scheduled = true
          setImmediate(flush)
        }
      }),

    afterDurable: <T>(value: T) => {
      if (durability.allDurable()) return value
      return new Promise<T>((resolve, reject) => {
        durability.whenAllDurable(() => resolve(value), (reason) => { reject(report(reason)) })
      })
    },

    close: async () => {
      flush()
      await durability.close()
    }
  }
}
