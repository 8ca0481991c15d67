import { closeSync, fdatasync, fsyncSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import type Database from 'better-sqlite3'

interface PendingWrite {
  run: () => unknown
  resolve: (value: unknown) => void
  reject: (reason: unknown) => void
  /** False: answered once committed, without waiting for the WAL's flush (see GroupCommit.enqueue). */
  awaitSync: boolean
}

type Outcome = { ok: true, value: unknown } | { ok: false, error: unknown }

interface DurabilityWaiter {
  /** The commit that must be on disk first. */
  commit: number
  release: () => void
  fail: (reason: unknown) => void
}

export interface GroupCommitOptions {
  /**
   * The WAL file to fdatasync after commits (synchronous=full). Without it (normal, `:memory:`)
   * a write is answered as soon as its COMMIT returned.
   */
  walFile?: string
  /** Called after each committed (and verified) transaction with the number of writes it held. */
  onCommit?: (writes: number) => void
  /** Called after each fdatasync of the WAL with how long it took (tests order events with it; metrics time it). */
  onSync?: (durationMs: number) => void
  /**
   * Called after each COMMIT, before any write of it is acknowledged; when it throws, every write
   * of the batch fails with its error (the store checks that its file is still in place).
   */
  verify?: () => void
  /** What a failure is reported as to the write or read that meets it (the store turns SQLite's errors into codes). */
  report?: (error: unknown) => unknown
  /**
   * Flushes the WAL to disk: `fs.fdatasync` (tests hold it, to see what happens while a flush
   * runs without depending on how fast the disk is).
   */
  fdatasync?: (fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => void
}

/** Runs writes in shared transactions and answers them once they are durable. */
export interface GroupCommit {
  /**
   * Queues `write` for the next batch and resolves with what it returned once its transaction is
   * committed and, with a WAL file to sync, on disk. When `write` throws, it must have changed
   * nothing, so that its neighbours commit as if it had never run: it changes the database with
   * one statement at most (SQLite undoes a failed statement by itself), or it is a
   * `db.transaction(...)` function, which runs as a SAVEPOINT inside the batch.
   *
   * `awaitSync: false` answers the write once it is committed, without waiting for the flush that
   * makes it durable: for the webhook dispatcher's own bookkeeping (claims, outcomes), which a
   * crash may lose at no cost but a repeated delivery, and which must not wait for the disk twice
   * per delivery. Nothing a client is answered with ever takes that path, and a read still waits
   * for every commit before it (afterDurable).
   */
  enqueue: <T>(write: () => T, options?: { awaitSync?: boolean }) => Promise<T>
  /**
   * Hands back `value`, read from the database just now, once everything committed so far is on
   * disk: a read never answers with a write that could still be lost. Immediate when nothing waits.
   */
  afterDurable: <T>(value: T) => T | Promise<T>
  /** Commits what is queued, waits until it is on disk, and releases the WAL file. */
  close: () => Promise<void>
}

/**
 * fdatasync calls that may run at once: a burst committed while one runs starts its own rather
 * than waiting for it to return, so an answer waits about one disk flush, not up to two.
 */
const MAX_SYNCS_IN_FLIGHT = 3

/**
 * Group commit. Every write that arrives in the same event-loop turn (the I/O phase that parsed a
 * burst of requests) joins one transaction, committed in `setImmediate`.
 *
 * Durability (synchronous=full) comes from one `fdatasync` of the WAL, run on libuv's thread pool
 * while the event loop goes on parsing and committing the next bursts (SQLite itself runs at
 * synchronous=NORMAL: WAL appends that stay consistent after a crash, without their own fsync).
 * Answers wait for the sync that covers their commit; one sync covers every commit made before it
 * started, so under load one fsync serves many transactions and the disk's latency overlaps CPU
 * work instead of adding to it. Once a sync has failed nothing is acknowledged any more: the page
 * cache's state is unknown, so every later write or read fails (and /health reports it).
 */
export function createGroupCommit (db: Database.Database, options: GroupCommitOptions = {}): GroupCommit {
  const { walFile, onCommit, onSync, verify } = options
  const flushWal = options.fdatasync ?? fdatasync
  const report = options.report ?? ((error: unknown) => error)
  let queue: PendingWrite[] = []
  let scheduled = false
  let committed = 0
  let synced = 0
  /** Syncs running now, and the newest commit the latest of them covers. */
  let syncsInFlight = 0
  let requested = 0
  let afterSync: Array<() => void> = []
  let waiters: DurabilityWaiter[] = []
  let failure: { reason: unknown } | undefined
  let walFd: number | undefined

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

  const openWal = (file: string): number => {
    const fd = openSync(file, 'r')
    // The WAL's directory entry must be durable too, once (SQLite's FULL does the same).
    const directory = openSync(dirname(file), 'r')
    try {
      fsyncSync(directory)
    } finally {
      closeSync(directory)
    }
    return fd
  }

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

  /** Runs `release` once commit number `commit` is on disk. */
  const whenDurable = (commit: number, release: () => void, fail: (reason: unknown) => void): void => {
    if (failure !== undefined) fail(failure.reason)
    else if (walFile === undefined || commit <= synced) release()
    else {
      waiters.push({ commit, release, fail })
      startSync(walFile)
    }
  }

  const flush = (): void => {
    scheduled = false
    const writes = queue
    queue = []
    if (writes.length === 0) return
    let outcomes: Outcome[]
    try {
      outcomes = runBatch.immediate(writes)
    } catch (error) {
      for (const write of writes) write.reject(report(error))
      return
    }
    const commit = ++committed
    // Nothing to sync: the COMMIT itself is as durable as this database gets.
    if (walFile === undefined) synced = commit
    try {
      verify?.()
    } catch (error) {
      for (const write of writes) write.reject(report(error))
      return
    }
    onCommit?.(writes.length)
    const settle = (write: PendingWrite, index: number): void => {
      const outcome = outcomes[index] as Outcome
      if (outcome.ok) write.resolve(outcome.value)
      else write.reject(report(outcome.error))
    }
    writes.forEach((write, index) => { if (!write.awaitSync) settle(write, index) })
    whenDurable(commit, () => {
      writes.forEach((write, index) => { if (write.awaitSync) settle(write, index) })
    }, (reason) => { for (const write of writes) write.reject(report(reason)) })
  }

  return {
    enqueue: <T>(run: () => T, { awaitSync = true }: { awaitSync?: boolean } = {}) => new Promise<T>((resolve, reject) => {
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
      if (failure === undefined && synced >= committed) return value
      return new Promise<T>((resolve, reject) => { whenDurable(committed, () => resolve(value), (reason) => { reject(report(reason)) }) })
    },

    close: async () => {
      flush()
      // Each sync that ends (on the thread pool) lowers syncsInFlight before it calls afterSync.
      // eslint-disable-next-line no-unmodified-loop-condition
      while (syncsInFlight > 0) await new Promise<void>((resolve) => { afterSync.push(resolve) })
      if (walFd !== undefined) closeSync(walFd)
      walFd = undefined
    }
  }
}
