/**
 * The checkpointer's thread (see checkpointer.ts): a connection of its own to the store's file that
 * folds the WAL back into the database file whenever the WAL was written since it last looked. It
 * runs PASSIVE checkpoints, which never take the write lock: the event loop's writes go on meanwhile.
 */
import { statSync } from 'node:fs'
import { parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { configureConnection } from './connection.js'
import { passiveCheckpoint, type CheckpointWorkerData } from './checkpointer.js'

if (parentPort === null) throw new Error('checkpoint-worker.js runs as a worker thread (see checkpointer.ts)')
const port = parentPort
const { filename, intervalMs } = workerData as CheckpointWorkerData

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
  const report = passiveCheckpoint(db, 'worker')
  // After a failure, look again at the next round even if nothing was written meanwhile.
  seen = 'error' in report ? '' : state
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
