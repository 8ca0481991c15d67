import { closeSync, fsyncSync, openSync } from 'node:fs'
import type Database from 'better-sqlite3'

/** Empty and owner-only if new: it holds webhook secrets, and SQLite gives its -wal, -shm and -journal that mode. */
export function createOwnerOnly (file: string): void {
  closeSync(openSync(file, 'a', 0o600))
}

/** `flags`: 'r+' for a file; 'r' for a directory, whose sync makes a rename or a new entry in it durable. */
export function syncPath (path: string, flags: 'r' | 'r+'): void {
  const fd = openSync(path, flags)
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Never a bare parameter as a LIMIT: SQLite (3.53) reads its value while planning and re-prepares
 * the statement on every new binding; a CAST keeps the plan (see docs/performance.md#what-the-measurements-decided).
 */
export const boundLimit = (name?: string): string => `CAST(${name === undefined ? '?' : `@${name}`} AS INTEGER)`

export function configureConnection (db: Database.Database): Database.Database {
  // Ids are int64: read every INTEGER as a bigint so nothing is rounded on the way back.
  db.defaultSafeIntegers(true)
  db.pragma('journal_mode = WAL')
  // NORMAL: consistent after a crash; for `full`, the group commit adds one fdatasync per group.
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
  // In-memory temporary B-trees (a few rows each): see docs/performance.md#what-the-measurements-decided.
  db.pragma('temp_store = MEMORY')
  return db
}
