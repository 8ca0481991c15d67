import type Database from 'better-sqlite3'
import type { SqliteOutbox } from './outbox.js'

/** What a repository of a SQLite store is given by the store that opened the database. */
export interface SqliteRepositoryContext {
  db: Database.Database
  /** Runs `write` in the group commit: answered once committed and, with full sync, on disk. */
  write: <T>(write: () => T) => Promise<T>
  /** Runs a read; its answer waits until what it may show is durable. */
  read: <T>(read: () => T) => T | Promise<T>
  outbox: SqliteOutbox
}
