import { statSync } from 'node:fs'
import Database from 'better-sqlite3'
import { databaseUnavailable, storageFull, type ServiceError } from '../../errors.js'

/**
 * SQLite's primary result codes (better-sqlite3 names extended codes `SQLITE_IOERR_WRITE` and so
 * on) that mean "the database cannot be used right now", not a bug: an I/O error, a lock held
 * past busy_timeout, a file that cannot be opened (the WAL, the shared memory) or written.
 */
const UNAVAILABLE = new Set(['SQLITE_IOERR', 'SQLITE_BUSY', 'SQLITE_CANTOPEN', 'SQLITE_READONLY', 'SQLITE_PROTOCOL'])

/**
 * What a failure of SQLite or of the file system under it means for a client: `storage-full`
 * (SQLITE_FULL: the disk, or the file's size limit), `unavailable` (the codes above, and any
 * system call error such as a failed fdatasync), or undefined for anything else, which stays a bug
 * (constraint violations are turned into their own codes where they are expected; SQLITE_CORRUPT
 * needs a person, not a retry).
 */
export function sqliteFailure (err: unknown): ServiceError | undefined {
  if (err instanceof Database.SqliteError) {
    const primary = /^SQLITE_[A-Z]+/.exec(err.code)?.[0]
    if (primary === 'SQLITE_FULL') return storageFull(err)
    if (primary !== undefined && UNAVAILABLE.has(primary)) return databaseUnavailable(err)
    return undefined
  }
  if (typeof (err as NodeJS.ErrnoException | undefined)?.syscall === 'string') return databaseUnavailable(err)
  return undefined
}

/** Which file a path names: equal for the same file, different once it was replaced. */
interface FileIdentity { dev: number, ino: number }

const sameFile = (a: FileIdentity | undefined, b: FileIdentity | undefined): boolean =>
  a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino

function identityOf (filename: string): FileIdentity | undefined {
  try {
    const stats = statSync(filename, { throwIfNoEntry: false })
    return stats === undefined ? undefined : { dev: stats.dev, ino: stats.ino }
  } catch {
    // ENOTDIR, EACCES…: the path no longer leads to the file either.
    return undefined
  }
}

/**
 * How often, at most, reads look whether the files are still in place. Commits (before their writes
 * are acknowledged) and /health always look: two stat(2) calls per group-commit batch, about a third
 * of a small batch's commit, so that no write is ever acknowledged into a file that is gone.
 */
export const FILE_CHECK_INTERVAL_MS = 10

/**
 * Tells whether `filename` (and its WAL) still name the files this process opened. SQLite in WAL
 * mode goes on writing into open files that were deleted or renamed over: every write would be
 * acknowledged and then lost at the next start. So the store looks after every commit, before it
 * acknowledges it, before a read (at most every FILE_CHECK_INTERVAL_MS), and whenever its health
 * is checked. While the store is open, SQLite never replaces either file itself (the WAL
 * is only ever truncated, or removed by the last connection to close).
 */
export interface FileCheck {
  /** Throws (`unavailable`) when a path names another file or none; `always` looks even if it looked just now. */
  verify: (always?: boolean) => void
}

export function createFileCheck (filename: string, onLost: (error: ServiceError) => void): FileCheck {
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
      // The main file must be there; a WAL that did not exist when the store opened is not checked.
      const moved = paths.find((path, i) => (i === 0 || opened[i] !== undefined) && !sameFile(opened[i], identityOf(path)))
      if (moved === undefined) return
      // Once gone, for good: what this process holds is no longer in the file the path names, and
      // switching to whatever file is there now would hide that. A restart opens the path afresh.
      lost = databaseUnavailable(new Error(`${moved} was deleted or replaced while in use`))
      onLost(lost)
      throw lost
    }
  }
}
