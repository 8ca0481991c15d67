/** A release may start on a schema migrated further only if every later step expands (docs/upgrading.md). */
export interface MigrationStep<Up> {
  /** What the step does, as `plant-store migrate` and the start log name it. */
  name: string
  up: Up
  /** The release before keeps working on the schema this step leaves (nothing it reads renamed or dropped). */
  expand?: true
}

export interface MigrationReport {
  from: number
  /** Greater than `known` when a newer, compatible release migrated the schema. */
  version: number
  /** This code's schema version: how many steps it knows. */
  known: number
  applied: ReadonlyArray<{ version: number, name: string }>
  /** `table.column`: declared nullable columns a resource's table lacked, added at start (an expand step). */
  addedColumns?: readonly string[]
  /** SQLite: the consistent copy of the file kept before the first step changed it. */
  backup?: string
}

/** The oldest schema version whose code serves one migrated through `version`: its last contract step, or 0. */
export function compatibleFrom (steps: ReadonlyArray<MigrationStep<unknown>>, version: number): number {
  for (let step = version; step >= 1; step--) {
    if (steps[step - 1]?.expand !== true) return step
  }
  return 0
}

export const newerSchemaProblem = (version: number, known: number): string =>
  `the database schema (version ${version}) is newer than this plant-store (${known})`

export const incompatibleSchemaProblem = (version: number, known: number, needs: number | null): string =>
  `${newerSchemaProblem(version, known)} and not compatible with it (${needs === null
    ? 'it records no compatibility'
    : `it needs code of schema version ${needs} or newer`}): deploy that release, or a newer one`

export const behindSchemaProblem = (version: number, known: number): string =>
  `the database schema (version ${version}) is behind this plant-store (${known}) and MIGRATE_ON_START=0: ` +
  'run `plant-store migrate` first (docs/upgrading.md)'

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
