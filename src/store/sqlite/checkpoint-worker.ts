/**
 * The checkpointer's thread (see checkpointer.ts): a connection of its own to the store's file that
 * folds the WAL back into the database file whenever the WAL was written since it last looked. It
 * runs PASSIVE checkpoints, which never take the write lock: the event loop's writes go on meanwhile.
 */
import { statSync } from 'node:fs'
import { parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { configureConnection } from './connection.js'
import type { CheckpointReport, CheckpointWorkerData } from './checkpointer.js'

if (parentPort === null) throw new Error('checkpoint-worker.js runs as a worker thread (see checkpointer.ts)')
const port = parentPort
const { filename, intervalMs, catchUpPages } = workerData as CheckpointWorkerData

const db = configureConnection(new Database(filename, { fileMustExist: true }))
const walFile = `${filename}-wal`
/**
 * The WAL as last seen: a checkpoint runs only when it changed (an idle service does nothing). A
 * write within the same clock tick as the last look, into a WAL no longer growing, is checkpointed
 * after the next write (or by close): until then SQLite reads it from the WAL, durable either way.
 */
let seen = ''

function checkpoint (): void {
  const stats = statSync(walFile, { throwIfNoEntry: false })
  const state = stats === undefined ? '' : `${stats.size}:${stats.mtimeMs}`
  if (state === seen) return
  seen = state
  const started = performance.now()
  let report: CheckpointReport
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: bigint, log: bigint, checkpointed: bigint }>
    const frames = Number(result?.log ?? 0n)
    // Frames committed while this checkpoint ran are not copied yet, and SQLite only starts the
    // WAL over when every frame was copied before a write begins: under steady writes that moment
    // may never come. Past catchUpPages the event loop runs one checkpoint itself (checkpointer.ts).
    report = { thread: 'worker', frames, checkpointed: Number(result?.checkpointed ?? 0n), catchUp: frames >= catchUpPages, durationMs: performance.now() - started }
  } catch (error) {
    // A full disk or an I/O error: the next round tries again; the parent logs it once.
    seen = ''
    report = { thread: 'worker', error: error instanceof Error ? error.message : String(error), durationMs: performance.now() - started }
  }
  port.postMessage(report)
}

const timer = setInterval(checkpoint, intervalMs)
port.on('message', (message: unknown) => {
  if (message !== 'close') return
  clearInterval(timer)
  db.close()
  port.close()
})
port.postMessage('ready')
