import { Worker } from 'node:worker_threads'
import type Database from 'better-sqlite3'
import type { StoreLog } from '../contract.js'

/** What the checkpoint thread is told: watch a database file (under an id of the process's), or stop. */
export type ToCheckpointThread =
  | { type: 'open', id: number, filename: string, intervalMs: number }
  | { type: 'close', id: number }

/** What the checkpoint thread answers about one database: opened or not, a checkpoint, closed. */
export type FromCheckpointThread = { id: number } & (
  | { type: 'ready' | 'closed' }
  | { type: 'failed', error: string }
  | { type: 'report', report: CheckpointReport })

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
  /** The checkpoint thread's id: one thread for every database of the process. */
  threadId: number
  close: () => Promise<void>
}

const SQLITE_AUTOCHECKPOINT_PAGES = 1000
export const DEFAULT_CHECKPOINT_INTERVAL_MS = 100
export const DEFAULT_CATCH_UP_PAGES = 4 * SQLITE_AUTOCHECKPOINT_PAGES
const CLOSE_TIMEOUT_MS = 10_000

interface Registration {
  receive: (message: FromCheckpointThread) => void
  /** The thread failed or stopped: the database is no longer checkpointed there. */
  lost: (details: object, message: string) => void
}

interface CheckpointThread {
  worker: Worker
  registrations: Map<number, Registration>
  /** Requests the thread has not answered yet (an open, a close): while there are any, it holds the process. */
  unanswered: number
}

/** The process waits for the thread's answer (a close must not lose its last checkpoint), not for the thread. */
function awaitAnswer (started: CheckpointThread): void {
  if (started.unanswered++ === 0) started.worker.ref()
}

function answered (started: CheckpointThread): void {
  if (--started.unanswered === 0) started.worker.unref()
}

let thread: CheckpointThread | undefined
let lastId = 0

/**
 * The process's checkpoint thread, started with the first database. A thread costs a V8 isolate and
 * its start: a process that opens databases one after another (the CLI's commands, a test suite)
 * would otherwise start one for each. If it fails or stops, every database it had checkpoints on
 * its own event loop again, and the next one opened starts a new thread.
 */
function checkpointThread (): CheckpointThread {
  if (thread !== undefined) return thread
  const worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), {
    // A small heap is plenty for a few connections and their timers.
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 }
  })
  const started: CheckpointThread = { worker, registrations: new Map(), unanswered: 0 }
  const lose = (details: object, message: string): void => {
    if (thread === started) thread = undefined
    const lost = [...started.registrations.values()]
    started.registrations.clear()
    for (const registration of lost) registration.lost(details, message)
  }
  worker.on('message', (message: FromCheckpointThread) => {
    // Every open and close has one answer, even one for a database given up on meanwhile.
    if (message.type !== 'report') answered(started)
    started.registrations.get(message.id)?.receive(message)
  })
  worker.on('error', (err) => { lose({ err }, 'the checkpoint thread failed') })
  worker.on('exit', (code) => { lose({ code }, 'the checkpoint thread stopped') })
  // Idle, never what keeps the process alive: a process that exits without closing loses nothing (WAL
  // replay). After the listeners: listening for messages refs the worker again.
  worker.unref()
  thread = started
  return started
}

/**
 * Moves SQLite's WAL checkpoints off the event loop: `db` stops checkpointing and the process's
 * checkpoint thread, with a connection of its own, runs PASSIVE checkpoints
 * (see docs/performance.md#what-the-measurements-decided). Steady writes can keep the WAL from
 * starting over, so at `catchUpPages` the loop runs one checkpoint itself, between batches. If the
 * thread cannot take the database or dies, `db` checkpoints itself again.
 */
export function startCheckpointer (
  db: Database.Database, filename: string, options: CheckpointerOptions = {}
): Checkpointer {
  const { log, onCheckpoint } = options
  const catchUpPages = options.catchUpPages ?? DEFAULT_CATCH_UP_PAGES
  const started = checkpointThread()
  const { worker, registrations } = started
  const id = ++lastId
  let markReady: (opened: boolean) => void = () => {}
  const ready = new Promise<boolean>((resolve) => { markReady = resolve })
  let markClosed: () => void = () => {}
  const closed = new Promise<void>((resolve) => { markClosed = resolve })
  let closing = false
  let failing = false

  const fallBack = (details: object, message: string): void => {
    registrations.delete(id)
    markReady(false)
    markClosed()
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

  const receive = (message: FromCheckpointThread): void => {
    if (message.type === 'report') {
      report(message.report)
      // The thread's report is already old when it arrives: at catchUpPages the loop checkpoints whatever
      // is left, or under steady writes the WAL would grow for as long as they last.
      const behind = !('error' in message.report) && message.report.frames >= catchUpPages
      if (behind && db.open && !closing) report(passiveCheckpoint(db, 'loop'))
      return
    }
    if (message.type === 'ready') {
      if (db.open && !closing) db.pragma('wal_autocheckpoint = 0')
      markReady(true)
    } else if (message.type === 'failed') {
      fallBack({ err: message.error }, 'the checkpoint thread could not open the database')
    } else {
      registrations.delete(id)
      markClosed()
    }
  }
  registrations.set(id, { receive, lost: fallBack })
  const intervalMs = options.intervalMs ?? DEFAULT_CHECKPOINT_INTERVAL_MS
  awaitAnswer(started)
  worker.postMessage({ type: 'open', id, filename, intervalMs } satisfies ToCheckpointThread)

  return {
    ready,
    threadId: worker.threadId,
    async close () {
      if (closing) return
      closing = true
      if (!registrations.has(id)) return
      awaitAnswer(started)
      worker.postMessage({ type: 'close', id } satisfies ToCheckpointThread)
      // A thread that does not answer is stopped: its other databases fall back to the event loop.
      const timer = setTimeout(() => { void worker.terminate() }, CLOSE_TIMEOUT_MS)
      try {
        await closed
      } finally {
        clearTimeout(timer)
      }
    }
  }
}
