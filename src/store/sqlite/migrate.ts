import { existsSync, statSync } from 'node:fs'
import type Database from 'better-sqlite3'
import { StoreOpenError } from '../../lib/errors.js'
import { behindSchemaProblem, type MigrationReport } from '../migration.js'
import { createOwnerOnly } from './connection.js'
import { APPLICATION_ID, applyMigration, migrations } from './migrations.js'
import { identityProblem, readIdentity } from './preflight.js'

/** A copy to put the release before back (docs/upgrading.md), owner-only as it holds webhook secrets. */
function keepCopy (db: Database.Database, filename: string, version: number): string {
  // `<file>.schema-<version>.bak`, numbered before `.bak` when a copy of that version is already there.
  const base = `${filename}.schema-${version}`
  let copy = `${base}.bak`
  for (let n = 1; existsSync(copy); n++) copy = `${base}.${n}.bak`
  createOwnerOnly(copy)
  // VACUUM INTO reads one snapshot and writes a compact file with no WAL of its own.
  db.prepare('VACUUM INTO ?').run(copy)
  return copy
}

/** Brings the schema up in one transaction (a failed step changes nothing), after a copy; refused without `apply`. */
export function migrateSqlite (db: Database.Database, filename: string, apply: boolean): MigrationReport {
  const known = migrations.length
  // Read again on the writable connection: another process may have changed the file since the preflight.
  const identity = readIdentity(db)
  const problem = identityProblem(identity, known)
  if (problem !== undefined) throw new StoreOpenError(problem)
  const { version } = identity
  if (version >= known) return { from: version, version, known, applied: [] }
  if (!apply) throw new StoreOpenError(behindSchemaProblem(version, known))
  const inFile = filename !== ':memory:' && (statSync(filename, { throwIfNoEntry: false })?.size ?? 0) > 0
  const backup = inFile && version > 0 ? keepCopy(db, filename, version) : undefined
  const applied: Array<{ version: number, name: string }> = []
  db.transaction(() => {
    for (let step = version; step < known; step++) {
      applyMigration(db, step)
      applied.push({ version: step + 1, name: migrations[step]?.name ?? '' })
    }
    db.pragma(`application_id = ${APPLICATION_ID}`)
    db.pragma(`user_version = ${known}`)
  }).immediate()
  return { from: version, version: known, known, applied, ...(backup !== undefined && { backup }) }
}
