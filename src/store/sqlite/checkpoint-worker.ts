/** The checkpoint thread (see checkpointer.ts): PASSIVE checkpoints of each file whose WAL was written since. */
import { statSync } from 'node:fs'
import { parentPort } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { configureConnection } from './connection.js'
import { passiveCheckpoint, type FromCheckpointThread, type ToCheckpointThread } from './checkpointer.js'

if (parentPort === null) throw new Error('checkpoint-worker.js runs as a worker thread (see checkpointer.ts)')
const port = parentPort
const send = (message: FromCheckpointThread): void => { port.postMessage(message) }

const databases = new Map<number, { db: Database.Database, timer: NodeJS.Timeout }>()

function watch (id: number, filename: string, intervalMs: number): void {
  const db = configureConnection(new Database(filename, { fileMustExist: true }))
  const walFile = `${filename}-wal`
  // Only a changed WAL is checkpointed. A write in the tick of the last look waits for the next
  // write (or close); until then SQLite reads it from the WAL, durable either way.
  let seen = ''
  const timer = setInterval(() => {
    const stats = statSync(walFile, { throwIfNoEntry: false })
    const state = stats === undefined ? '' : `${stats.size}:${stats.mtimeMs}`
    if (state === seen) return
    const report = passiveCheckpoint(db, 'worker')
    // After a failure, look again at the next round even if nothing was written meanwhile.
    seen = 'error' in report ? '' : state
    send({ id, type: 'report', report })
  }, intervalMs)
  databases.set(id, { db, timer })
}

port.on('message', (message: ToCheckpointThread) => {
  const { id } = message
  if (message.type === 'open') {
    try {
      watch(id, message.filename, message.intervalMs)
      send({ id, type: 'ready' })
    } catch (error) {
      send({ id, type: 'failed', error: error instanceof Error ? error.message : String(error) })
    }
    return
  }
  const database = databases.get(id)
  databases.delete(id)
  if (database !== undefined) {
    clearInterval(database.timer)
    database.db.close()
  }
  send({ id, type: 'closed' })
})
