import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { ConfigError } from '../lib/errors.js'
import { countOf } from '../lib/human.js'
import type { Scope } from '../auth/scopes.js'
import { tokenDigest } from '../auth/tokens.js'
import { loadConfig, type Config } from '../config/load-config.js'
import { withTrialToken } from '../auth/token-settings.js'
import { isPostgresUrl, postgresName } from '../store/postgres/connection.js'
import { backupDatabase, backupDatabaseTo, BackupError, restoreDatabase } from '../store/sqlite/backup.js'
import { inspectDatabaseFile } from '../store/sqlite/preflight.js'

/** Where a command writes: stdout for its result, stderr for problems; `data` is stdout as a stream (`backup -`). */
export interface Output {
  out: (text: string) => void
  err: (text: string) => void
  data: NodeJS.WritableStream & { isTTY?: boolean }
  /** Both stdout and stderr are a terminal: `serve` would make up a token for a trial there (withTrialToken). */
  terminal?: boolean
}

/** 32 random bytes, base64url (43 characters), as withTrialToken makes one. */
export function newToken (): string {
  return randomBytes(32).toString('base64url')
}

/** With an entry, then the API_TOKENS_FILE line, which holds only the digest: the token is shown this once. */
export function runToken (output: Output, entry?: { name: string, scopes: readonly Scope[] }): number {
  const token = newToken()
  output.out(`${token}\n`)
  if (entry === undefined) return 0
  output.err('plant-store token: the token above is shown only once; add this line to API_TOKENS_FILE and restart:\n')
  output.out(`${entry.name} ${entry.scopes.join(',')} sha256:${tokenDigest(token)}\n`)
  return 0
}

/** With `serve`, as `serve` reads it (a made-up token at a terminal only); a problem is said as `name: …`. */
export function readConfig (
  env: NodeJS.ProcessEnv, output: Output, { serve, name = 'plant-store' }: { serve?: boolean, name?: string } = {}
): Config | undefined {
  try {
    return serve === undefined ? loadConfig(env) : withTrialToken(loadConfig(env), serve)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    output.err(`${name}: ${err.message}\n`)
    return undefined
  }
}

/** The SQLite file DATABASE_URL names, or undefined (with a message) when it names something else. */
function sqliteFile (config: Config, command: string, output: Output): string | undefined {
  if (isPostgresUrl(config.databaseUrl)) {
    output.err(
      `plant-store ${command}: DATABASE_URL is PostgreSQL; use pg_dump and pg_restore (docs/operations.md, "Backups ` +
      'and restore")\n'
    )
    return undefined
  }
  if (config.databaseUrl === ':memory:') {
    output.err(`plant-store ${command}: DATABASE_URL is :memory:, there is no file to ${command}\n`)
    return undefined
  }
  return config.databaseUrl
}

export async function runBackup (file: string, env: NodeJS.ProcessEnv, output: Output): Promise<number> {
  const config = readConfig(env, output)
  const database = config === undefined ? undefined : sqliteFile(config, 'backup', output)
  if (database === undefined) return 1
  const toStdout = file === '-'
  if (toStdout && output.data.isTTY === true) {
    output.err('plant-store backup: stdout is a terminal; redirect it to a file or a pipe (plant-store backup - > ' +
      'plants.bak)\n')
    return 1
  }
  try {
    const { contents, pages } = toStdout
      ? await backupDatabaseTo(database, output.data)
      : await backupDatabase(database, file)
    const report = `plant-store backup: ${database} → ${toStdout ? 'stdout' : file}: ${contents}, ${pages} pages, ` +
      'integrity_check ok\n'
    // stdout carries the database: the report goes to stderr.
    if (toStdout) output.err(report)
    else output.out(report)
    return 0
  } catch (err) {
    // The reader went away (`backup - | head`): as a closed pipe ends any command, without a word.
    if (toStdout && (err as { code?: unknown }).code === 'EPIPE') return 1
    if (!(err instanceof BackupError)) throw err
    output.err(`plant-store backup: ${err.message}\n`)
    return 1
  }
}

export function runRestore (
  file: string, env: NodeJS.ProcessEnv, output: Output, options: { force?: boolean } = {}
): number {
  const config = readConfig(env, output)
  const database = config === undefined ? undefined : sqliteFile(config, 'restore', output)
  if (database === undefined) return 1
  try {
    const { contents, kept } = restoreDatabase(file, database, options)
    output.out(`plant-store restore: ${file} → ${database}: ${contents}, integrity_check ok; start the server again\n`)
    if (kept !== undefined) output.out(`plant-store restore: the database it replaced is kept as ${kept}\n`)
    return 0
  } catch (err) {
    if (!(err instanceof BackupError)) throw err
    output.err(`plant-store restore: ${err.message}\n`)
    return 1
  }
}

/** Validates the configuration and looks at every dependency it names, changing nothing; 0 when all are fine. */
export async function runCheck (env: NodeJS.ProcessEnv, output: Output): Promise<number> {
  const config = readConfig(env, output, { serve: output.terminal === true })
  if (config === undefined) return 1
  output.out('plant-store check: configuration ok\n')
  if (config.tokenGenerated) {
    output.out('plant-store check: no API_TOKENS, API_TOKENS_FILE or OIDC_ISSUER: serve makes up a token for a ' +
      'trial run at this terminal only\n')
  }
  const failed: string[] = []
  if (!await checkDatabase(config, output)) {
    failed.push(isPostgresUrl(config.databaseUrl) ? 'PostgreSQL' : 'the SQLite database')
  }
  if (config.redis !== undefined && !await checkRedis(config.redis.url, output)) failed.push('Redis')
  if (config.oidc !== undefined && !await checkOidc(config.oidc.issuer, output)) failed.push('the OpenID provider')
  if (failed.length === 0) return 0
  output.err(`plant-store check: failed: ${failed.join(', ')}\n`)
  return 1
}

async function checkDatabase (config: Config, output: Output): Promise<boolean> {
  if (isPostgresUrl(config.databaseUrl)) {
    const { checkPostgres } = await import('../store/postgres/check.js')
    const problem = await checkPostgres(config.databaseUrl, config.pgConnectTimeoutMs, config.migrateOnStart)
    const name = postgresName(config.databaseUrl)
    if (problem !== undefined) {
      output.err(`plant-store check: the PostgreSQL database ${name}: ${problem}\n`)
      return false
    }
    output.out(`plant-store check: the PostgreSQL database ${name} answers and its schema is usable\n`)
    return true
  }
  if (config.migrateOnStart && (config.databaseUrl === ':memory:' || !existsSync(config.databaseUrl))) {
    output.out(`plant-store check: database ${config.databaseUrl} does not exist yet; the first start creates it\n`)
    return true
  }
  const problem = inspectDatabaseFile(config.databaseUrl, { refuseBehind: !config.migrateOnStart })
  if (problem !== undefined) {
    output.err(`plant-store check: cannot use the database ${config.databaseUrl}: ${problem}\n`)
    return false
  }
  output.out(`plant-store check: database ${config.databaseUrl} ok (quick_check)\n`)
  return true
}

const REDIS_CHECK_TIMEOUT_MS = 3000

/** REDIS_URL without what may be secret in it (its user and password): scheme, host, port, database. */
function redisName (url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`
  } catch {
    return 'REDIS_URL'
  }
}

async function checkRedis (url: string, output: Output): Promise<boolean> {
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: REDIS_CHECK_TIMEOUT_MS,
    commandTimeout: REDIS_CHECK_TIMEOUT_MS
  })
  // The socket's error (ECONNREFUSED, a TLS failure) says more than connect()'s "Connection is closed".
  let cause: Error | undefined
  redis.on('error', (err: Error) => { cause ??= err })
  try {
    await redis.connect()
    await redis.ping()
    output.out(`plant-store check: Redis ${redisName(url)} answers\n`)
    return true
  } catch (err) {
    output.err(`plant-store check: Redis ${redisName(url)}: ${(cause ?? err as Error).message}\n`)
    return false
  } finally {
    redis.disconnect()
  }
}

async function checkOidc (issuer: string, output: Output): Promise<boolean> {
  const { checkProvider } = await import('../auth/oidc.js')
  try {
    const keys = await checkProvider(issuer)
    output.out(`plant-store check: the OpenID provider ${issuer} answers: discovery document and ` +
      `${countOf(keys, 'key', 'keys')}\n`)
    return true
  } catch (err) {
    const cause = (err as Error).cause
    const detail = cause instanceof Error ? ` (${cause.message})` : ''
    output.err(`plant-store check: the OpenID provider ${issuer}: ${(err as Error).message}${detail}\n`)
    return false
  }
}
