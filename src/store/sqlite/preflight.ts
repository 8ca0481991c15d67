import { existsSync, statSync } from 'node:fs'
import Database from 'better-sqlite3'
import { behindSchemaProblem, newerSchemaProblem } from '../migration.js'
import { APPLICATION_ID, migrations } from './migrations.js'

interface DatabaseIdentity {
  applicationId: number
  /** `PRAGMA user_version`: how many migrations have run. */
  version: number
  tables: number
}

/** Read-only statements: safe before anything writes. */
export function readIdentity (db: Database.Database): DatabaseIdentity {
  return {
    applicationId: Number(db.pragma('application_id', { simple: true })),
    version: Number(db.pragma('user_version', { simple: true })),
    tables: Number(db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").pluck().get())
  }
}

/** Why this code must not use the database: undefined for an empty file or a plant-store one it knows. */
export function identityProblem (
  { applicationId, version, tables }: DatabaseIdentity, known = migrations.length
): string | undefined {
  if (applicationId !== APPLICATION_ID && (applicationId !== 0 || version !== 0 || tables !== 0)) {
    return 'the file is not a plant-store database'
  }
  return version > known ? newerSchemaProblem(version, known) : undefined
}

/**
 * Why the file cannot be used, read before anything writes to it (WAL, migrations): a foreign or damaged file is
 * left as it was. `quick_check` reads every page, to catch corruption before writes are acknowledged on top of it.
 */
export function inspectDatabaseFile (filename: string, options: { refuseBehind?: boolean } = {}): string | undefined {
  if (filename === ':memory:' || (statSync(filename, { throwIfNoEntry: false })?.size ?? 0) === 0) {
    return options.refuseBehind === true ? behindSchemaProblem(0, migrations.length) : undefined
  }
  let db: Database.Database | undefined
  try {
    db = new Database(filename, { readonly: true, fileMustExist: true })
    const identity = readIdentity(db)
    const problem = identityProblem(identity)
    if (problem !== undefined) return problem
    if (options.refuseBehind === true && identity.version < migrations.length) {
      return behindSchemaProblem(identity.version, migrations.length)
    }
    const problems = db.prepare('PRAGMA quick_check(3)').pluck().all() as string[]
    if (problems.length !== 1 || problems[0] !== 'ok') return `the database file is corrupt (${problems.join('; ')})`
    return undefined
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (code === 'SQLITE_NOTADB') return 'the file is not a SQLite database'
    if (code === 'SQLITE_CORRUPT') return 'the database file is corrupt'
    return `the database file cannot be read (${typeof code === 'string' ? code : 'error'})`
  } finally {
    db?.close()
  }
}

/**
 * SQLite's own exclusive lock (a crash leaves none stale), held until close: 'busy' while another
 * process has the file open. `restore` holds it; a starting server takes and drops it.
 */
export function lockIdle (file: string): Database.Database | 'busy' | undefined {
  if (!existsSync(file)) return undefined
  const db = new Database(file, { fileMustExist: true, timeout: 0 })
  try {
    db.pragma('locking_mode = EXCLUSIVE')
    // In exclusive locking mode the lock this takes is kept after COMMIT, until close.
    db.exec('BEGIN EXCLUSIVE; COMMIT')
    return db
  } catch (err) {
    db.close()
    if ((err as { code?: unknown }).code === 'SQLITE_BUSY') return 'busy'
    throw err
  }
}
