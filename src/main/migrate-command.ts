import { StoreOpenError } from '../lib/errors.js'
import type { Config } from '../config/load-config.js'
import { RESOURCES } from '../resources/index.js'
import { migrationLines, type MigrationReport } from '../store/migration.js'
import { isPostgresUrl, parsePostgresUrl } from '../store/postgres/connection.js'
import { readConfig, type Output } from './commands.js'

/** Over DATABASE_DIRECT_URL when set (a session of PostgreSQL itself, not a pooler's), as a start migrates. */
async function migratePostgres (config: Config): Promise<MigrationReport> {
  const { migrateWhenReachable } = await import('../store/postgres/migrate.js')
  const { startFailure } = await import('../store/postgres/startup.js')
  const target = parsePostgresUrl(config.databaseUrl)
  const connection = {
    connectionString: parsePostgresUrl(config.databaseDirectUrl ?? config.databaseUrl).connectionString,
    application_name: 'plant-store migrate',
    connectionTimeoutMillis: config.pgConnectTimeoutMs
  }
  try {
    return await migrateWhenReachable(connection, target, RESOURCES,
      { apply: true, startup: { timeoutMs: config.pgStartupTimeoutMs } })
  } catch (err) {
    throw startFailure(err)
  }
}

/** SQLite: the store opened as a start opens it (checks, a copy kept, the steps), then closed. */
async function migrateSqliteFile (config: Config): Promise<MigrationReport> {
  if (config.databaseUrl === ':memory:') {
    throw new StoreOpenError('DATABASE_URL is :memory:, there is nothing to migrate')
  }
  const { createSqliteStore } = await import('../store/sqlite/sqlite-store.js')
  const store = createSqliteStore({ filename: config.databaseUrl, alone: true, checkpoint: false })
  await store.close()
  return store.migration
}

/** `plant-store migrate`: says each step it applied and the version reached; exit 0, or 1 with the cause. */
export async function runMigrate (env: NodeJS.ProcessEnv, output: Output): Promise<number> {
  const config = readConfig(env, output, { name: 'plant-store migrate' })
  if (config === undefined) return 1
  try {
    const report = isPostgresUrl(config.databaseUrl) ? await migratePostgres(config) : await migrateSqliteFile(config)
    for (const line of migrationLines(report)) output.out(`plant-store migrate: ${line}\n`)
    return 0
  } catch (err) {
    // Each store runs its steps in one transaction: a failed one leaves the schema as it was.
    output.err(`plant-store migrate: ${err instanceof Error ? err.message : String(err)}; no step was applied\n`)
    return 1
  }
}
