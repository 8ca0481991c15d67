import { statSync } from 'node:fs'
import Database from 'better-sqlite3'
import { APPLICATION_ID, migrations } from './migrations.js'

/**
 * Looks at an existing database file through a read-only connection, before anything writes to it
 * (switching to WAL, migrating): why it cannot be used, or undefined when it can (or does not exist
 * yet). A foreign or damaged file is thus refused and left byte-for-byte as it was.
 * `quick_check` reads every page once: it costs a moment at start-up on a large file, and catches
 * corruption before the service acknowledges writes on top of it.
 */
export function inspectDatabaseFile (filename: string): string | undefined {
  if (filename === ':memory:' || (statSync(filename, { throwIfNoEntry: false })?.size ?? 0) === 0) return undefined
  let db: Database.Database | undefined
  try {
    db = new Database(filename, { readonly: true, fileMustExist: true })
    const applicationId = Number(db.pragma('application_id', { simple: true }))
    const version = Number(db.pragma('user_version', { simple: true }))
    const tables = Number(db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").pluck().get())
    if (applicationId !== APPLICATION_ID && (applicationId !== 0 || version !== 0 || tables !== 0)) {
      return 'the file is not a plant-store database'
    }
    if (version > migrations.length) {
      return `the database schema (version ${version}) is newer than this plant-store (${migrations.length})`
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
