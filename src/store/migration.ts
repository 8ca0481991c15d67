/**
 * What both stores' numbered schema steps are, and the rules a rolling deploy depends on
 * (docs/upgrading.md): a release may start on a schema a newer release migrated only
 * when every step past its own is an expand step.
 */
export interface MigrationStep<Up> {
  /** What the step does, as `plant-store migrate` and the start log name it. */
  name: string
  up: Up
  /**
   * The release before keeps working on the schema this step leaves (a table, a nullable column, an
   * index or a function added; nothing it reads renamed, retyped or dropped). Absent: a contract step.
   */
  expand?: true
}

/** What a migration run did. */
export interface MigrationReport {
  /** The schema version found. */
  from: number
  /** The version the schema is at now (greater than `known` when a newer, compatible release migrated it). */
  version: number
  /** This code's schema version: how many steps it knows. */
  known: number
  applied: ReadonlyArray<{ version: number, name: string }>
  /** `table.column`: declared nullable columns a resource's table lacked, added at start (an expand step). */
  addedColumns?: readonly string[]
  /** SQLite: the consistent copy of the file kept before the first step changed it. */
  backup?: string
}

/**
 * The oldest schema version whose code still serves a schema migrated through step `version`:
 * the last contract step up to it (0 when every step is an expand step).
 */
export function compatibleFrom (steps: ReadonlyArray<MigrationStep<unknown>>, version: number): number {
  for (let step = version; step >= 1; step--) {
    if (steps[step - 1]?.expand !== true) return step
  }
  return 0
}

export const newerSchemaProblem = (version: number, known: number): string =>
  `the database schema (version ${version}) is newer than this plant-store (${known})`

/** A schema a newer release migrated past what this code can serve: both versions, and what to do. */
export const incompatibleSchemaProblem = (version: number, known: number, needs: number | null): string =>
  `${newerSchemaProblem(version, known)} and not compatible with it (${needs === null
    ? 'it records no compatibility'
    : `it needs code of schema version ${needs} or newer`}): deploy that release, or a newer one`

/** MIGRATE_ON_START=0 and a schema behind this code's: migrations are a step of their own. */
export const behindSchemaProblem = (version: number, known: number): string =>
  `the database schema (version ${version}) is behind this plant-store (${known}) and MIGRATE_ON_START=0: ` +
  'run `plant-store migrate` first (docs/upgrading.md)'

/** The lines `plant-store migrate` prints and the start log carries. */
export function migrationLines (report: MigrationReport): string[] {
  const { known } = report
  const lines = report.applied.map(({ version, name }) => `applied migration ${version}: ${name}`)
  if (report.backup !== undefined) lines.unshift(`kept a copy of the database before migrating: ${report.backup}`)
  const added = (report.addedColumns ?? []).map((column) => `added the declared nullable column ${column}`)
  lines.push(...added)
  if (report.applied.length > 0) {
    lines.push(`schema version ${report.version} (was ${report.from})`)
  } else if (added.length > 0) {
    lines.push(`schema version ${report.version}`)
  } else {
    lines.push(report.version > known
      ? `schema version ${report.version}, newer than this release's ${known} and compatible with it: nothing to apply`
      : `schema version ${report.version}: nothing to apply`)
  }
  return lines
}
