import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { ServiceError, StoreOpenError } from '../../lib/errors.js'
import type { RepositoriesOf, ResourceDefinition } from '../../resources/definition.js'
import { RESOURCES, type ServedResources } from '../../resources/index.js'
import type { Store, StoreLog } from '../contract.js'
import { configureConnection, createOwnerOnly } from './connection.js'
import { startCheckpointer, type CheckpointerOptions } from './checkpointer.js'
import { createFileCheck, sqliteFailure } from './failures.js'
import { createGroupCommit, type GroupCommitOptions } from './group-commit.js'
import { migrateSqlite } from './migrate.js'
import { createSqliteOutbox, type SqliteOutbox } from './outbox.js'
import { prepareOnUse } from './prepare-on-use.js'
import { createSqliteRepository, type SqliteRepositoryContext } from './repository.js'
import { inspectDatabaseFile, lockIdle } from './preflight.js'
import { createSqliteWebhookStore } from './webhook-store.js'
import { ensureSqliteTable } from './tables.js'
import { sqliteTrim } from './trim.js'

export const SQLITE_SYNCHRONOUS = ['full', 'normal'] as const
export type SqliteSynchronous = (typeof SQLITE_SYNCHRONOUS)[number]

export interface SqliteStoreOptions<D extends readonly ResourceDefinition[] = ServedResources> {
  filename: string
  /** The resources it serves: their tables are made when missing. */
  resources?: D
  synchronous?: SqliteSynchronous
  onCommit?: (writes: number) => void
  onSync?: (durationMs: number) => void
  log?: StoreLog
  fdatasync?: GroupCommitOptions['fdatasync']
  /** `false` leaves WAL checkpoints to SQLite, on the event loop. */
  checkpoint?: Omit<CheckpointerOptions, 'log'> | false
  /** `false`: no read-only look before opening; only for files this process made (a sandbox tenant's). */
  preflight?: false
  /** A server's store: a file another process has open (a second server) is refused. */
  alone?: true
  /** Compiles each statement at its first run (see prepare-on-use.ts): for stores opened often and used little. */
  prepareOnUse?: boolean
  /** The only connection to the file ever: the WAL's index then lives in memory, no -shm file is made at each open. */
  exclusive?: boolean
  /** With `checkpoint: false`: SQLite checkpoints once the WAL holds this many bytes, and cuts it back to them. */
  walLimitBytes?: number
  /** `'check'`: no migration; a file behind this code's schema is refused (MIGRATE_ON_START=0). */
  migrate?: 'check'
}

/** Room for a few dozen plants' WAL frames: a write of one page can fit where a failed one left space. */
const PROBE_BYTES = 64 * 1024

function openDatabase (filename: string, exclusive: boolean, walLimitBytes: number | undefined): Database.Database {
  if (filename !== ':memory:') {
    try {
      mkdirSync(dirname(filename), { recursive: true })
      createOwnerOnly(filename)
    } catch (err) {
      const code = (err as { code?: unknown }).code
      if (code !== 'EACCES' && code !== 'EPERM') throw err
      throw new StoreOpenError(permissionAdvice(filename, String(code)))
    }
  }
  const db = new Database(filename)
  if (exclusive) db.pragma('locking_mode = EXCLUSIVE')
  configureConnection(db)
  if (walLimitBytes !== undefined) {
    // A WAL SQLite has checkpointed is reused, not shrunk, unless journal_size_limit cuts it back.
    const pageSize = Number(db.pragma('page_size', { simple: true }))
    db.pragma(`wal_autocheckpoint = ${Math.max(1, Math.floor(walLimitBytes / pageSize))}`)
    db.pragma(`journal_size_limit = ${walLimitBytes}`)
  }
  return db
}

/** What to do: a container's host folder is typically root's, while the service runs as an unprivileged user. */
function permissionAdvice (filename: string, code: string): string {
  const uid = process.getuid?.()
  const user = uid === undefined ? 'the user this process runs as' : `uid ${uid}, the user this process runs as`
  return `permission denied (${code}): the folder ${dirname(filename)} must be writable by ${user}` +
    (uid === undefined ? '' : ` (on the host of a mounted folder: chown ${uid} <that folder>)`)
}

/** One process per file (docs/operations.md): a second server on it would go unnoticed otherwise. */
function refuseFileInUse (filename: string): void {
  const lock = lockIdle(filename)
  if (lock === 'busy') {
    throw new StoreOpenError(
      'it is in use by another process (a plant-store server running on it?): one server per SQLite file; ' +
      'stop the other, or give this one another DATABASE_URL (several instances need PostgreSQL, docs/scaling.md)')
  }
  lock?.close()
}

type AnyOptions = SqliteStoreOptions<readonly ResourceDefinition[]>

/** The group commit, and what the store knows of its failures: why writes fail now, whether the file is there. */
function openWrites (db: Database.Database, options: AnyOptions, outbox: SqliteOutbox, wake: () => void) {
  const { filename, onCommit, onSync, log } = options
  const inFile = filename !== ':memory:'
  const file = inFile
    ? createFileCheck(filename, (error) => {
      log?.error({ err: error.cause },
        'the database file was deleted or replaced: writes, reads and /health answer 503 until a restart')
    })
    : undefined
  // Why writes fail right now: /health retries with a probe write, so the store recovers by itself.
  let trouble: ServiceError | undefined
  const failure = (err: unknown): unknown => {
    // A batch SQLite failed rolled back whatever it read about subscriptions too.
    if (!(err instanceof ServiceError)) outbox.forget()
    const error = err instanceof ServiceError ? undefined : sqliteFailure(err)
    if (error === undefined) return err
    if (trouble?.code !== error.code) log?.error({ err, code: error.code }, 'database writes fail')
    trouble = error
    return error
  }
  // Writes are group-committed: those that arrive together share one transaction and one fsync.
  const durable = (options.synchronous ?? 'full') === 'full' && inFile
  const writes = createGroupCommit(db, {
    ...(durable && { walFile: `${filename}-wal` }),
    onCommit: (count) => {
      if (trouble !== undefined) log?.info({ code: trouble.code }, 'database writes work again')
      trouble = undefined
      onCommit?.(count)
      if (outbox.takeWritten()) wake()
    },
    ...(onSync !== undefined && { onSync }),
    ...(options.fdatasync !== undefined && { fdatasync: options.fdatasync }),
    // One check per batch that the file is still there: a write is never acknowledged into a gone file.
    ...(file !== undefined && { verify: () => { file.verify(true) } }),
    report: failure
  })
  const read = <T>(run: () => T): T | Promise<T> => {
    try {
      file?.verify()
      return writes.afterDurable(run())
    } catch (err) {
      throw failure(err)
    }
  }
  return { writes, read, file, failure, troubled: () => trouble !== undefined }
}

function pingOf (
  db: Database.Database, { writes, file, failure, troubled }: ReturnType<typeof openWrites>
): () => Promise<void> {
  const ping = db.prepare('SELECT 1').pluck()
  const writeProbe = db.transaction(() => {
    db.prepare<[number], unknown>('INSERT OR REPLACE INTO write_probe (id, data) VALUES (1, zeroblob(?))')
      .run(PROBE_BYTES)
  })
  const clearProbe = db.transaction(() => { db.prepare('DELETE FROM write_probe').run() })
  return async () => {
    try {
      file?.verify(true)
      ping.get()
    } catch (err) {
      throw failure(err)
    }
    await writes.afterDurable(undefined)
    if (troubled()) {
      await writes.enqueue(writeProbe)
      await writes.enqueue(clearProbe)
    }
  }
}

async function closeDatabase (
  db: Database.Database, options: AnyOptions, writes: ReturnType<typeof openWrites>['writes'],
  checkpointer: { close: () => Promise<void> } | undefined
): Promise<void> {
  if (!db.open) return
  await writes.close()
  await checkpointer?.close()
  // Fold the WAL back so a stopped service leaves one file; on failure SQLite replays it at the next start.
  if (options.filename !== ':memory:') {
    try {
      db.pragma('wal_checkpoint(TRUNCATE)')
    } catch (err) {
      options.log?.error({ err },
        'the database could not be checkpointed at close; its WAL is kept and replayed at the next start')
    }
  }
  db.close()
}

/** The embedded store: one file, one process, its repositories sharing one connection and one group commit. */
export function createSqliteStore<D extends readonly ResourceDefinition[] = ServedResources> (
  options: SqliteStoreOptions<D>
): Store<D> {
  const resources: readonly ResourceDefinition[] = options.resources ?? RESOURCES
  const apply = options.migrate !== 'check'
  const problem = options.preflight === false
    ? undefined
    : inspectDatabaseFile(options.filename, { refuseBehind: !apply })
  if (problem !== undefined) throw new StoreOpenError(problem)
  if (options.alone === true && options.filename !== ':memory:') refuseFileInUse(options.filename)
  const connection = openDatabase(options.filename, options.exclusive === true, options.walLimitBytes)
  let migration
  try {
    migration = migrateSqlite(connection, options.filename, apply)
    const added = resources.flatMap((resource) => ensureSqliteTable(connection, resource, apply))
    if (added.length > 0) migration = { ...migration, addedColumns: added }
  } catch (err) {
    connection.close()
    throw err
  }
  const db = options.prepareOnUse === true ? prepareOnUse(connection) : connection
  const outbox = createSqliteOutbox(db)
  const wakers = new Set<() => void>()
  const opened = openWrites(db, options, outbox, () => { for (const wake of wakers) wake() })
  const { writes, read } = opened
  const checkpointer = options.filename !== ':memory:' && options.checkpoint !== false
    ? startCheckpointer(db, options.filename, {
      ...options.checkpoint, ...(options.log !== undefined && { log: options.log })
    })
    : undefined
  const context: SqliteRepositoryContext = { db, write: (run) => writes.enqueue(run), read, outbox }
  const sequences = resources.map(({ collection }) => ({ table: collection, resource: collection }))
  const trim = sqliteTrim(db, sequences)
  // Keyed by collection, as RepositoriesOf<D> says: the one map TypeScript cannot follow.
  const repositories = Object.fromEntries(
    resources.map((definition) => [definition.collection, createSqliteRepository(definition, context)])
  ) as RepositoriesOf<D>
  return {
    ...repositories,
    migration,
    // Webhook writes share the group commit: as durable as plant writes.
    webhooks: createSqliteWebhookStore({
      db,
      write: async (transaction, writeOptions) => await writes.enqueue(transaction, writeOptions),
      afterDurable: writes.afterDurable,
      onSubscriptionsChanged: outbox.forget,
      listen: async (wake) => {
        wakers.add(wake)
        return async () => { wakers.delete(wake) }
      }
    }),
    ping: pingOf(db, opened),
    trim: async (limits) => { await writes.enqueue(() => { trim(limits) }) },
    close: async () => { await closeDatabase(db, options, writes, checkpointer) }
  }
}
