import { Worker } from 'node:worker_threads'
import type Database from 'better-sqlite3'
import type { StoreLog } from '../contract.js'

export interface CheckpointWorkerData {
  filename: string
  intervalMs: number
}

/** One checkpoint: by the worker thread, or by the event loop catching up. */
export type CheckpointReport = {
  thread: 'worker' | 'loop'
  durationMs: number
} & ({
  frames: number
  checkpointed: number
} | { error: string })

/** One PASSIVE checkpoint (never takes the write lock); a failure (full disk, I/O) is retried next time. */
export function passiveCheckpoint (db: Database.Database, thread: CheckpointReport['thread']): CheckpointReport {
  const started = performance.now()
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: bigint, checkpointed: bigint }>
    return {
      thread,
      frames: Number(result?.log ?? 0n),
      checkpointed: Number(result?.checkpointed ?? 0n),
      durationMs: performance.now() - started
    }
  } catch (error) {
    return {
      thread, error: error instanceof Error ? error.message : String(error), durationMs: performance.now() - started
    }
  }
}

export interface CheckpointerOptions {
  intervalMs?: number
  catchUpPages?: number
  onCheckpoint?: (report: CheckpointReport) => void
  log?: StoreLog
}

export interface Checkpointer {
  ready: Promise<boolean>
  close: () => Promise<void>
}

const SQLITE_AUTOCHECKPOINT_PAGES = 1000
export const DEFAULT_CHECKPOINT_INTERVAL_MS = 100
export const DEFAULT_CATCH_UP_PAGES = 4 * SQLITE_AUTOCHECKPOINT_PAGES
const CLOSE_TIMEOUT_MS = 10_000

/**
 * Moves SQLite's WAL checkpoints off the event loop: `db` stops checkpointing and a worker thread
 * with its own connection runs PASSIVE checkpoints (see docs/performance.md#what-the-measurements-decided).
 * Steady writes can keep the WAL from starting over, so at `catchUpPages` the loop runs one
 * checkpoint itself, between batches. If the thread cannot start or dies, `db` checkpoints itself again.
 */
export function startCheckpointer (
  db: Database.Database, filename: string, options: CheckpointerOptions = {}
): Checkpointer {
  const { log, onCheckpoint } = options
  const catchUpPages = options.catchUpPages ?? DEFAULT_CATCH_UP_PAGES
  const data: CheckpointWorkerData = { filename, intervalMs: options.intervalMs ?? DEFAULT_CHECKPOINT_INTERVAL_MS }
  const worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), {
    workerData: data,
    // A small heap is plenty for a connection and a timer.
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 }
  })
  // Never what keeps the process alive: a process that exits without closing loses nothing (WAL replay).
  worker.unref()
  let markReady: (started: boolean) => void = () => {}
  const ready = new Promise<boolean>((resolve) => { markReady = resolve })
  const exited = new Promise<void>((resolve) => { worker.once('exit', () => { resolve() }) })
  let closing = false
  let failing = false

  const fallBack = (details: object, message: string): void => {
    markReady(false)
    if (closing) return
    log?.error(details, `${message}: SQLite checkpoints the WAL on the event loop again`)
    if (db.open) db.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`)
  }

  const report = (message: CheckpointReport): void => {
    if ('error' in message) {
      if (!failing) {
        log?.error({ err: message.error, thread: message.thread }, 'a WAL checkpoint failed; the next one tries again')
      }
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
    // The thread's report is already old when it arrives: at catchUpPages the loop checkpoints whatever
    // is left, or under steady writes the WAL would grow for as long as they last.
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
