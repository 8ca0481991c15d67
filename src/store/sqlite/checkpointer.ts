import { Worker } from 'node:worker_threads'
import type Database from 'better-sqlite3'
import type { StoreLog } from '../store.js'

/** What the worker thread is started with. */
export interface CheckpointWorkerData {
  filename: string
  intervalMs: number
}

/** One checkpoint: by the worker thread, or by the event loop catching up (for tests, and the log when one fails). */
export type CheckpointReport = {
  thread: 'worker' | 'loop'
  durationMs: number
} & ({
  /** Frames in the WAL, and how many of them are in the database file now. */
  frames: number
  checkpointed: number
} | { error: string })

/**
 * One PASSIVE checkpoint on `db` (never takes the write lock), as the thread named `thread` runs
 * it: what it copied, or why it failed (a full disk or an I/O error: the next one tries again).
 */
export function passiveCheckpoint (db: Database.Database, thread: CheckpointReport['thread']): CheckpointReport {
  const started = performance.now()
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: bigint, checkpointed: bigint }>
    return { thread, frames: Number(result?.log ?? 0n), checkpointed: Number(result?.checkpointed ?? 0n), durationMs: performance.now() - started }
  } catch (error) {
    return { thread, error: error instanceof Error ? error.message : String(error), durationMs: performance.now() - started }
  }
}

export interface CheckpointerOptions {
  /** How often the worker looks whether the WAL was written. */
  intervalMs?: number
  /** WAL frames (pages) from which the event loop catches up with one checkpoint of its own. */
  catchUpPages?: number
  onCheckpoint?: (report: CheckpointReport) => void
  log?: StoreLog
}

export interface Checkpointer {
  /** Whether the worker started (false: it failed, and `db` checkpoints by itself again). */
  ready: Promise<boolean>
  /** Stops the worker and closes its connection; the caller's connection checkpoints by itself again. */
  close: () => Promise<void>
}

/** SQLite's own wal_autocheckpoint default, set again when the worker is gone. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000
export const DEFAULT_CHECKPOINT_INTERVAL_MS = 100
/** 4 × SQLite's threshold: about 16 MB of WAL at 4 KiB pages. */
export const DEFAULT_CATCH_UP_PAGES = 4 * SQLITE_AUTOCHECKPOINT_PAGES
/** How long close() waits for a checkpoint in progress before it stops the thread. */
const CLOSE_TIMEOUT_MS = 10_000

/**
 * Moves SQLite's WAL checkpoints off the event loop. By default the connection whose COMMIT takes
 * the WAL past 1000 pages runs the checkpoint inside that COMMIT: it copies the WAL's pages into
 * the database file and fsyncs both, which held the event loop for milliseconds every few thousand
 * writes under load (and more often with webhook events, which write more pages). Here `db` stops
 * checkpointing (wal_autocheckpoint = 0) and a worker thread with a connection of its own runs
 * PASSIVE checkpoints every `intervalMs` while the WAL is being written, and the loop goes on
 * serving. SQLite starts the WAL over only once every frame is copied before a write begins,
 * which steady writes during a concurrent checkpoint can put off indefinitely; once the thread
 * reports a WAL of `catchUpPages` frames, the event loop runs one PASSIVE checkpoint itself,
 * between batches, where no write of its own can interleave: it copies only what the worker has
 * not yet, and the next write starts the WAL over. Durability is SQLite's either way: a checkpoint
 * copies what the WAL already holds, with SQLite's own syncs.
 *
 * When the thread cannot start or dies, `db` checkpoints by itself again (and the log says so), so
 * the WAL never grows without bound.
 */
export function startCheckpointer (db: Database.Database, filename: string, options: CheckpointerOptions = {}): Checkpointer {
  const { log, onCheckpoint } = options
  const catchUpPages = options.catchUpPages ?? DEFAULT_CATCH_UP_PAGES
  const data: CheckpointWorkerData = { filename, intervalMs: options.intervalMs ?? DEFAULT_CHECKPOINT_INTERVAL_MS }
  const worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), {
    workerData: data,
    // A connection and a timer: a small heap is plenty, and keeps the service's memory down.
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 }
  })
  // Never what keeps the process alive: close() ends it, and a process that exits without closing
  // the store loses nothing (the next open replays the WAL).
  worker.unref()
  let markReady: (started: boolean) => void = () => {}
  const ready = new Promise<boolean>((resolve) => { markReady = resolve })
  // Resolved however the thread ends (an error ends it too: the 'error' event comes first).
  const exited = new Promise<void>((resolve) => { worker.once('exit', () => { resolve() }) })
  let closing = false
  let failing = false

  /** Back to checkpoints in the committing connection: the WAL stays bounded without the thread. */
  const fallBack = (details: object, message: string): void => {
    markReady(false)
    if (closing) return
    log?.error(details, `${message}: SQLite checkpoints the WAL on the event loop again`)
    if (db.open) db.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`)
  }

  const report = (message: CheckpointReport): void => {
    if ('error' in message) {
      if (!failing) log?.error({ err: message.error, thread: message.thread }, 'a WAL checkpoint failed; the next one tries again')
      failing = true
    } else if (failing) {
      failing = false
      log?.info({ frames: message.frames }, 'WAL checkpoints work again')
    }
    onCheckpoint?.(message)
  }

  worker.on('message', (message: 'ready' | CheckpointReport) => {
    if (message === 'ready') {
      if (db.open && !closing) db.pragma('wal_autocheckpoint = 0')
      markReady(true)
      return
    }
    report(message)
    // SQLite only starts the WAL over once every frame is copied before a write begins. The
    // thread's report is already old: the frames the loop committed while its checkpoint ran
    // (several milliseconds) are not in it, so even "copied every frame" is short of the WAL by
    // now, and under steady writes the WAL would grow for as long as they last (to 120 MB in a
    // five-second benchmark run, 2026-11-25). So at catchUpPages the loop checkpoints whatever
    // the report says: the rest is a few hundred frames at most, and a WAL nobody wrote since is
    // no work at all.
    const behind = !('error' in message) && message.frames >= catchUpPages
    if (behind && db.open && !closing) report(passiveCheckpoint(db, 'loop'))
  })
  worker.on('error', (err) => { fallBack({ err }, 'the checkpoint thread failed') })
  worker.on('exit', (code) => { if (code !== 0) fallBack({ code }, 'the checkpoint thread stopped') })

  return {
    ready,
    async close () {
      if (closing) return
      closing = true
      worker.postMessage('close')
      const timer = setTimeout(() => { void worker.terminate() }, CLOSE_TIMEOUT_MS)
      try {
        await exited
      } finally {
        clearTimeout(timer)
      }
    }
  }
}
