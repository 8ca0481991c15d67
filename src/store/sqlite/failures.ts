import { statSync } from 'node:fs'
import Database from 'better-sqlite3'
import { databaseUnavailable, storageFull, type ServiceError } from '../../lib/errors.js'

/** "The database cannot be used right now", not a bug. */
const UNAVAILABLE = new Set(['SQLITE_IOERR', 'SQLITE_BUSY', 'SQLITE_CANTOPEN', 'SQLITE_READONLY', 'SQLITE_PROTOCOL'])

/** Anything else stays a bug (SQLITE_CORRUPT needs a person, not a retry). */
export function sqliteFailure (err: unknown): ServiceError | undefined {
  if (err instanceof Database.SqliteError) {
    const primary = /^SQLITE_[A-Z]+/.exec(err.code)?.[0]
    if (primary === 'SQLITE_FULL') return storageFull(err)
    if (primary !== undefined && UNAVAILABLE.has(primary)) return databaseUnavailable(err)
    return undefined
  }
  const { code, syscall } = (err ?? {}) as NodeJS.ErrnoException
  if (code === 'ENOSPC' || code === 'EDQUOT') return storageFull(err)
  if (typeof syscall === 'string') return databaseUnavailable(err)
  return undefined
}

interface FileIdentity { dev: number, ino: number }

const sameFile = (a: FileIdentity | undefined, b: FileIdentity | undefined): boolean =>
  a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino

function identityOf (filename: string): FileIdentity | undefined {
  try {
    return statSync(filename, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

/** Reads look at most this often, commits and /health always (docs/performance.md#what-the-measurements-decided). */
export const FILE_CHECK_INTERVAL_MS = 10

/**
 * SQLite goes on writing into open files deleted or renamed over, every write lost at the next start: the store
 * looks before it acknowledges a commit, before a read, and on /health.
 */
export function createFileCheck (
  filename: string, onLost: (error: ServiceError) => void
): { verify: (always?: boolean) => void } {
  const paths = [filename, `${filename}-wal`]
  const opened = paths.map(identityOf)
  let lost: ServiceError | undefined
  let lastLook = 0
  return {
    verify: (always = false) => {
      if (lost !== undefined) throw lost
      const now = Date.now()
      if (!always && now - lastLook < FILE_CHECK_INTERVAL_MS) return
      lastLook = now
      const moved = paths.find((path, i) =>
        (i === 0 || opened[i] !== undefined) && !sameFile(opened[i], identityOf(path)))
      if (moved === undefined) return
      // For good: switching to whatever file is there now would hide the loss. A restart opens the path afresh.
      lost = databaseUnavailable(new Error(`${moved} was deleted or replaced while in use`))
      onLost(lost)
      throw lost
    }
  }
}
