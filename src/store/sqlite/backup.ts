import { randomBytes } from 'node:crypto'
import { chmodSync, copyFileSync, createReadStream, existsSync, linkSync, renameSync, rmSync, statSync } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import { basename, dirname, join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { countOf } from '../../lib/human.js'
import { RESOURCES } from '../../resources/index.js'
import { createOwnerOnly, syncPath } from './connection.js'
import { identityProblem, lockIdle, readIdentity } from './preflight.js'

export class BackupError extends Error {
  override name = 'BackupError'
}

interface BackupResult {
  /** What the copy holds, as the command prints it: `3 plants`, `1 plant`. */
  contents: string
  pages: number
}

/** All pages in one step: SQLite restarts a backup whenever another connection writes between steps. */
const ALL_PAGES = 0x7fffffff

/** Same directory, so the final rename is atomic. */
const besides = (file: string, purpose: string): string =>
  join(dirname(file), `.${basename(file)}.${purpose}-${randomBytes(6).toString('hex')}`)

const codeOf = (err: unknown): string => String((err as { code?: unknown }).code ?? (err as Error).message)

/** `what` names the file in the refusal: `the backup`. */
function verify (file: string, what: string): BackupResult {
  let db: Database.Database | undefined
  try {
    const opened = db = new Database(file, { fileMustExist: true })
    const problems = db.prepare('PRAGMA integrity_check').pluck().all() as string[]
    if (problems.length !== 1 || problems[0] !== 'ok') {
      throw new BackupError(`integrity_check failed: ${problems.slice(0, 3).join('; ')}`)
    }
    const problem = identityProblem(readIdentity(db))
    if (problem !== undefined) throw new BackupError(problem)
    return {
      contents: RESOURCES.map(({ collection, name }) =>
        countOf(Number(opened.prepare(`SELECT count(*) FROM ${collection}`).pluck().get()), name, collection)
      ).join(', '),
      pages: Number(db.pragma('page_count', { simple: true }))
    }
  } catch (err) {
    const problem = err instanceof BackupError
      ? err.message
      : (err as { code?: unknown }).code === 'SQLITE_NOTADB'
          ? 'not a SQLite database'
          : `cannot be read (${codeOf(err)})`
    throw new BackupError(`${what} is unusable: ${problem}`)
  } finally {
    db?.close()
  }
}

/** One consistent snapshot while a server keeps running, verified and synced before it gets its name. */
export async function backupDatabase (source: string, target: string): Promise<BackupResult> {
  if (!existsSync(source)) throw new BackupError(`the database ${source} does not exist`)
  if (existsSync(target)) throw new BackupError(`${target} already exists; choose another name or remove it first`)
  if (resolve(source) === resolve(target)) throw new BackupError('the backup cannot be the database itself')
  const partial = besides(target, 'partial')
  const db = new Database(source, { fileMustExist: true, timeout: 5000 })
  try {
    // A backup holds the webhook secrets too: owner-only from its first byte.
    createOwnerOnly(partial)
    await db.backup(partial, { progress: () => ALL_PAGES })
  } catch (err) {
    rmSync(partial, { force: true })
    throw new BackupError(`the backup failed: ${(err as Error).message}`)
  } finally {
    db.close()
  }
  try {
    const result = verify(partial, 'the backup')
    syncPath(partial, 'r+')
    renameSync(partial, target)
    syncPath(dirname(target), 'r')
    return result
  } catch (err) {
    rmSync(partial, { force: true })
    throw err
  }
}

/** Staged beside the database (a container's /tmp may be too small), streamed, removed. */
export async function backupDatabaseTo (source: string, out: NodeJS.WritableStream): Promise<BackupResult> {
  const staged = besides(source, 'stream')
  try {
    const result = await backupDatabase(source, staged)
    await pipeline(createReadStream(staged), out, { end: false })
    return result
  } finally {
    rmSync(staged, { force: true })
  }
}

function lockIdleDatabase (file: string): Database.Database | undefined {
  let lock
  try {
    lock = lockIdle(file)
  } catch (err) {
    throw new BackupError(`${file} cannot be opened (${codeOf(err)})`)
  }
  if (lock === 'busy') {
    throw new BackupError(`${file} is in use (a plant-store server is running on it?): stop it first, then restore`)
  }
  return lock
}

/**
 * Renamed over the target (atomic); the old database is kept as `<target>.before-restore-<UTC time>`
 * (refused without `force`), and the old -wal and -shm go, so SQLite cannot replay the old log into it.
 */
export function restoreDatabase (
  source: string, target: string, options: { force?: boolean, now?: Date } = {}
): BackupResult & { kept?: string } {
  if (!existsSync(source)) throw new BackupError(`the backup ${source} does not exist`)
  if (statSync(source).isDirectory()) {
    throw new BackupError(`the backup ${source} is a directory, not a backup file (plant-store backup writes one)`)
  }
  if (statSync(target, { throwIfNoEntry: false })?.isDirectory() === true) {
    throw new BackupError(`the database ${target} (DATABASE_URL) is a directory, not a database file`)
  }
  if (resolve(source) === resolve(target)) throw new BackupError('the backup is the database itself')
  if (existsSync(target) && options.force !== true) {
    throw new BackupError(
      `the database ${target} exists; run restore with --force to replace it (the old file is kept beside it)`
    )
  }
  const lock = lockIdleDatabase(target)
  let kept: string | undefined
  const incoming = besides(target, 'restore')
  try {
    copyFileSync(source, incoming)
    // The copy takes the backup's mode; the database it becomes is owner-only, as a new one is.
    chmodSync(incoming, 0o600)
    const result = verify(incoming, `the backup ${source}`)
    syncPath(incoming, 'r+')
    lock?.close()
    for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${target}${suffix}`, { force: true })
    if (lock !== undefined) {
      // A second name for the old file, then the rename over it: at every moment the database
      // name holds the old database or the new one, and the old one survives under its new name.
      kept = `${target}.before-restore-${(options.now ?? new Date()).toISOString().replace(/[-:]|\.\d+/g, '')}`
      linkSync(target, kept)
    }
    renameSync(incoming, target)
    syncPath(dirname(target), 'r')
    return { ...result, ...(kept !== undefined && { kept }) }
  } finally {
    if (lock?.open === true) lock.close()
    rmSync(incoming, { force: true })
    for (const suffix of ['-wal', '-shm']) rmSync(`${incoming}${suffix}`, { force: true })
  }
}
