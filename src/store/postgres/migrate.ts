import pg from 'pg'
import { StoreOpenError } from '../../lib/errors.js'
import type { ResourceDefinition } from '../../resources/definition.js'
import {
  behindSchemaProblem, compatibleFrom, incompatibleSchemaProblem, newerSchemaProblem, type MigrationReport,
  type MigrationStep
} from '../migration.js'
import { tablePrefix, type PostgresTarget } from './connection.js'
import { migrations } from './migrations.js'
import { retryUntilReachable, type StartupRetry } from './startup.js'
import { ensureResourceTables, reconcileResourceTables, tableExists } from './table-sql.js'
import { ensureWriteFunctions, missingWriteFunctions } from './write-functions.js'

/** Whoever migrates a schema holds this advisory lock (of a session, or of a transaction). */
export const migrationLock = (schema: string | undefined): string => `plant-store migrations ${schema ?? ''}`

/** `name` and `compatible_from` came nullable in 1.1.0, as the release before inserts only `version`. */
export const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS plant_store_migrations (
  version         integer     PRIMARY KEY,
  applied_at      timestamptz NOT NULL DEFAULT now(),
  name            text,
  compatible_from integer)`

export function migrationRowsSql (steps: ReadonlyArray<MigrationStep<string>>, from: number, to: number): string {
  const rows = []
  for (let version = from + 1; version <= to; version++) {
    const name = (steps[version - 1]?.name ?? '').replaceAll("'", "''")
    rows.push(`(${version}, '${name}', ${compatibleFrom(steps, version)})`)
  }
  return `INSERT INTO plant_store_migrations (version, name, compatible_from) VALUES ${rows.join(', ')}`
}

/** The tables this code uses beside each resource's own. */
const CORE_TABLES = [
  'plant_store_migrations', 'idempotency_keys', 'chosen_ids',
  'webhook_subscriptions', 'webhook_deliveries', 'webhook_events', 'webhook_attempts'
]

/** Readiness: every table there, the newest step compatible; a newer contract step fails it, so balancers move off. */
export function schemaProbeSql (schema: string | undefined, resources: readonly ResourceDefinition[]): string {
  const prefix = tablePrefix(schema)
  const tables = [...CORE_TABLES, ...resources.map(({ collection }) => collection)]
    .map((table) => `to_regclass('${prefix}${table}') IS NOT NULL`)
  return `SELECT ${tables.join(' AND ')} AS tables, newest.version, newest.compatible_from
    FROM (SELECT version, compatible_from FROM ${prefix}plant_store_migrations
          ORDER BY version DESC LIMIT 1) newest`
}

/** Whether a (sandbox tenant's) schema at `version` is this code's; one that a newer release migrated is refused. */
export function isCurrentVersion (version: number): boolean {
  if (version > migrations.length) throw new StoreOpenError(newerSchemaProblem(version, migrations.length))
  return version === migrations.length
}

/** The newest step applied, and the oldest code it says still serves the schema; read-only, no table is made. */
export async function schemaState (
  client: pg.ClientBase, schema: string | undefined
): Promise<{ version: number, compatibleFrom: number | null }> {
  const table = `${tablePrefix(schema)}plant_store_migrations`
  if (!await tableExists(client, table)) return { version: 0, compatibleFrom: 0 }
  // Read through to_jsonb: the column is missing where only an older release has migrated, and then no row says it.
  const { rows: [row] } = await client.query<{ version: number, compatible_from: number | null }>(
    `SELECT version, (to_jsonb(m) ->> 'compatible_from')::integer AS compatible_from
     FROM ${table} m ORDER BY version DESC LIMIT 1`)
  return { version: row?.version ?? 0, compatibleFrom: row?.compatible_from ?? null }
}

interface MigrateOptions {
  /** `false`: change nothing; refuse a schema behind this code's (MIGRATE_ON_START=0). */
  apply: boolean
  /** The steps this code knows: the real list, or a test's longer one standing for a newer release. */
  steps?: ReadonlyArray<MigrationStep<string>>
}

/** Brings the schema to this code's version, or checks that it may serve it (a newer one recorded as compatible). */
export async function migrate (
  client: pg.ClientBase, target: PostgresTarget, resources: readonly ResourceDefinition[], options: MigrateOptions
): Promise<MigrationReport> {
  const steps = options.steps ?? migrations
  await client.query('BEGIN')
  try {
    // Starts queue, so each step runs once; a transaction's lock, as a pooler keeps only a transaction on one session.
    if (options.apply) {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [migrationLock(target.schema)])
    }
    const state = await schemaState(client, target.schema)
    const report = options.apply
      ? await applySteps(client, target, steps, state.version)
      : { from: state.version, version: state.version, known: steps.length, applied: [] }
    // With MIGRATE_ON_START=0 (the schema is at this code's version by then) what this release needs is not made.
    const missing = (what: string): StoreOpenError =>
      new StoreOpenError(`${behindSchemaProblem(steps.length, steps.length)}: ${what} is missing`)
    if (state.version > steps.length) {
      if (state.compatibleFrom === null || state.compatibleFrom > steps.length) {
        throw new StoreOpenError(incompatibleSchemaProblem(state.version, steps.length, state.compatibleFrom))
      }
    } else if (!options.apply && state.version < steps.length) {
      throw new StoreOpenError(behindSchemaProblem(state.version, steps.length))
    } else {
      await ensureResourceTables(client, resources, target.schema, options.apply ? undefined : missing)
    }
    const added = await reconcileResourceTables(client, resources, target.schema, options.apply)
    // This release's write functions beside any other release's (docs/upgrading.md, rule 4), on a newer schema too.
    if (options.apply) {
      await ensureWriteFunctions(client, resources, target.schema)
    } else {
      const [lacking] = await missingWriteFunctions(client, resources, target.schema)
      if (lacking !== undefined) throw missing(`the function ${lacking.name} of this release`)
    }
    await client.query('COMMIT')
    return added.length > 0 ? { ...report, addedColumns: added } : report
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  }
}

async function applySteps (
  client: pg.ClientBase, target: PostgresTarget, steps: ReadonlyArray<MigrationStep<string>>, version: number
): Promise<MigrationReport> {
  const applied = []
  if (target.schema !== undefined) {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${target.schema}`)
    await client.query(`SELECT set_config('search_path', '${target.schema}', true)`)
  }
  await client.query(MIGRATIONS_TABLE)
  // Expand: where the release before made the table, the columns it lacks are added (nullable).
  await client.query(`ALTER TABLE plant_store_migrations ADD COLUMN IF NOT EXISTS name text,
                        ADD COLUMN IF NOT EXISTS compatible_from integer`)
  for (let step = version; step < steps.length; step++) {
    await client.query(steps[step]?.up ?? '')
    await client.query(migrationRowsSql(steps, step, step + 1))
    applied.push({ version: step + 1, name: steps[step]?.name ?? '' })
  }
  return { from: version, version: Math.max(version, steps.length), known: steps.length, applied }
}

/** Without statement bounds (a step may take a while); retried while unreachable, so the database may start later. */
export async function migrateWhenReachable (
  connection: pg.ClientConfig, target: PostgresTarget, resources: readonly ResourceDefinition[],
  options: MigrateOptions & { startup?: StartupRetry | undefined }
): Promise<MigrationReport> {
  const once = async (): Promise<MigrationReport> => {
    const migrator = new pg.Client(connection)
    // A connection lost mid-migration fails the statement (retried); unheard, its 'error' would end the process.
    migrator.on('error', () => {})
    try {
      await migrator.connect()
      return await migrate(migrator, target, resources, options)
    } finally {
      await migrator.end().catch(() => {})
    }
  }
  return await retryUntilReachable(async () => {
    try {
      return await once()
    } catch (err) {
      // Another instance made the schema at the same moment (seen behind PgBouncer): it is there now.
      if (!['23505', '42P06'].includes(String((err as { code?: unknown }).code))) throw err
      return await once()
    }
  }, options.startup ?? { timeoutMs: 0 })
}
