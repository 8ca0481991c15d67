import { Worker } from 'node:worker_threads'
import type Database from 'better-sqlite3'
import type { StoreLog } from '../contract.js'

export type ToCheckpointThread =
  | { type: 'open', id: number, filename: string, intervalMs: number }
  | { type: 'close', id: number }

export type FromCheckpointThread = { id: number } & (
  | { type: 'ready' | 'closed' }
  | { type: 'failed', error: string }
  | { type: 'report', report: CheckpointReport })

export type CheckpointReport = { thread: 'worker' | 'loop', durationMs: number } &
  ({ frames: number, checkpointed: number } | { error: string })

/** PASSIVE never takes the write lock; a failure (full disk, I/O) is retried next time. */
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

interface Checkpointer {
  ready: Promise<boolean>
  threadId: number
  close: () => Promise<void>
}

const SQLITE_AUTOCHECKPOINT_PAGES = 1000
const CLOSE_TIMEOUT_MS = 10_000

interface Registration {
  receive: (message: FromCheckpointThread) => void
  lost: (details: object, message: string) => void
}

interface CheckpointThread {
  worker: Worker
  registrations: Map<number, Registration>
  /** Opens and closes not answered yet: while there are any, the thread holds the process. */
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
 * One thread for every database of the process: a thread costs a V8 isolate and its start. If it
 * fails, its databases checkpoint on the event loop again and the next one opened starts a new thread.
 */
function checkpointThread (): CheckpointThread {
  if (thread !== undefined) return thread
  const worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), {
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
  // Idle, it never keeps the process alive (an exit without close loses nothing: WAL replay).
  // After the listeners: listening for messages refs the worker again.
  worker.unref()
  thread = started
  return started
}

/**
 * Moves `db`'s WAL checkpoints off the event loop (see docs/performance.md#what-the-measurements-decided), but for
 * one at `catchUpPages`: steady writes can keep the WAL from starting over. Without the thread, `db` does them.
 */
export function startCheckpointer (
  db: Database.Database, filename: string, options: CheckpointerOptions = {}
): Checkpointer {
  const { log, onCheckpoint, catchUpPages = 4 * SQLITE_AUTOCHECKPOINT_PAGES, intervalMs = 100 } = options
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
      // The report is old when it arrives: under steady writes the WAL would grow for as long as they last.
      const behind = !('error' in message.report) && message.report.frames >= catchUpPages
      if (behind && db.open && !closing) report(passiveCheckpoint(db, 'loop'))
    } else if (message.type === 'ready') {
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
