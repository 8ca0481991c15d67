import { existsSync, statSync } from 'node:fs'
import type Database from 'better-sqlite3'
import { StoreOpenError } from '../../lib/errors.js'
import { behindSchemaProblem, type MigrationReport, type MigrationStep } from '../migration.js'
import { createOwnerOnly } from './connection.js'
import { APPLICATION_ID, applyMigration, migrations, type Migration } from './migrations.js'
import { identityProblem, readIdentity } from './preflight.js'

export interface SqliteMigrateOptions {
  /** `false`: apply nothing; a schema behind this code's is refused (MIGRATE_ON_START=0). */
  apply: boolean
  /** The steps this code knows: the real list, or a test's standing for another release. */
  steps?: ReadonlyArray<MigrationStep<Migration>>
}

/** `<file>.schema-<version>.bak`, or with a number before `.bak` when a copy of that version is already there. */
function backupName (filename: string, version: number): string {
  const base = `${filename}.schema-${version}`
  if (!existsSync(`${base}.bak`)) return `${base}.bak`
  for (let n = 1; ; n++) if (!existsSync(`${base}.${n}.bak`)) return `${base}.${n}.bak`
}

/**
 * A consistent copy of the database as it is, beside it and owner-only like it (it holds webhook
 * secrets), so that the release before can be put back (docs/upgrading.md): VACUUM INTO
 * reads one snapshot and writes a compact file with no WAL of its own.
 */
function keepCopy (db: Database.Database, filename: string, version: number): string {
  const copy = backupName(filename, version)
  createOwnerOnly(copy)
  db.prepare('VACUUM INTO ?').run(copy)
  return copy
}

/**
 * Brings an open database to this code's schema in one transaction (a failed step leaves the file
 * as it was), after keeping a copy of a file that held data; or, with `apply: false`, refuses one behind it.
 */
export function migrateSqlite (
  db: Database.Database, filename: string, options: SqliteMigrateOptions
): MigrationReport {
  const steps = options.steps ?? migrations
  // Read again on the writable connection: another process may have changed the file since the preflight.
  const identity = readIdentity(db)
  const problem = identityProblem(identity, steps.length)
  if (problem !== undefined) throw new StoreOpenError(problem)
  const { version } = identity
  if (version >= steps.length) return { from: version, version, known: steps.length, applied: [] }
  if (!options.apply) throw new StoreOpenError(behindSchemaProblem(version, steps.length))
  const inFile = filename !== ':memory:' && (statSync(filename, { throwIfNoEntry: false })?.size ?? 0) > 0
  const backup = inFile && version > 0 ? keepCopy(db, filename, version) : undefined
  const applied: Array<{ version: number, name: string }> = []
  db.transaction(() => {
    for (let step = version; step < steps.length; step++) {
      applyMigration(db, step, steps)
      applied.push({ version: step + 1, name: steps[step]?.name ?? '' })
    }
    db.pragma(`application_id = ${APPLICATION_ID}`)
    db.pragma(`user_version = ${steps.length}`)
  }).immediate()
  return { from: version, version: steps.length, known: steps.length, applied, ...(backup !== undefined && { backup }) }
}
