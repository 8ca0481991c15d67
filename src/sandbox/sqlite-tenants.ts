import { constants, copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { isServiceError } from '../lib/errors.js'
import { createOwnerOnly } from '../store/sqlite/connection.js'
import { sqliteFailure } from '../store/sqlite/failures.js'
import { createSqliteStore, type SqliteStoreOptions } from '../store/sqlite/sqlite-store.js'
import type { TenantBackend } from './tenants.js'

/** The folder of a SQLite sandbox's tenant files, next to DATABASE_URL's file. */
export const tenantDirectory = (databaseUrl: string): string => `${databaseUrl}.tenants`

interface SqliteTenantOptions {
  /** DATABASE_URL: a file (SANDBOX=1 refuses `:memory:`, whose tenants could never be closed). */
  databaseUrl: string
  store?: Omit<SqliteStoreOptions, 'filename' | 'checkpoint'>
}

const KEY = /^[0-9a-f]{64}$/

/** A tenant's WAL is checkpointed at, and cut back to, this size (SQLite's default lets it reach 4 MiB). */
export const TENANT_WAL_BYTES = 256 * 1024

/** One file per tenant (`<key>.db`) and a registry (`registry.db`) in a folder one process owns, as DATABASE_URL. */
export async function createSqliteTenants (options: SqliteTenantOptions): Promise<TenantBackend> {
  const dir = tenantDirectory(options.databaseUrl)
  const registryFile = join(dir, 'registry.db')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const { db, sql } = openRegistry(registryFile)
  const fileOf = (key: string): string => {
    if (!KEY.test(key)) throw new Error('a tenant key is a hex SHA-256')
    return join(dir, `${key}.db`)
  }
  removeOrphans(dir, (key) => sql.exists.get(key) !== undefined)
  // A new tenant's file is a copy of an empty, migrated one made at each start: far cheaper than migrating each.
  const template = join(dir, 'template.db')
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${template}${suffix}`, { force: true })
  await createSqliteStore({ ...options.store, filename: template, checkpoint: false }).close()

  // Set when a tenant could not be made for lack of space: the ping then tries the copy a new tenant needs.
  let full = false
  const failing = (err: unknown): unknown => {
    const failure = sqliteFailure(err) ?? err
    if (isServiceError(failure, 'storage-full')) full = true
    return failure
  }
  const copyTemplate = (file: string): void => {
    try {
      copyFileSync(template, file, constants.COPYFILE_EXCL)
    } catch (err) {
      // A copy cut short by a full disk must not be opened as the tenant's store later.
      rmSync(file, { force: true })
      throw failing(err)
    }
  }
  const ping = db.prepare('SELECT 1').pluck()
  const probe = join(dir, 'probe.db')
  return {
    exists: async (key) => sql.exists.get(key) !== undefined,
    touch: async (key, now) => {
      try {
        if (sql.insert.run(key, now, now).changes === 1) return true
        sql.touch.run(now, key)
        return false
      } catch (err) {
        throw failing(err)
      }
    },
    open: async (key, created) => {
      const file = fileOf(key)
      const made = !existsSync(file)
      if (made) copyTemplate(file)
      const store = createSqliteStore({
        ...options.store,
        filename: file,
        checkpoint: false,
        preflight: false,
        prepareOnUse: true,
        exclusive: true,
        walLimitBytes: TENANT_WAL_BYTES
      })
      return { store, created: created || made }
    },
    ping: async () => {
      try {
        ping.get()
      } catch (err) {
        throw failing(err)
      }
      if (!full) return
      rmSync(probe, { force: true })
      copyTemplate(probe)
      rmSync(probe, { force: true })
      full = false
    },
    count: async () => sql.count.get() ?? 0,
    leastRecentlyUsed: async (before, limit) => sql.lru.all(before, limit),
    remove: async (key, before) => {
      if (sql.remove.run(key, before).changes === 0) return false
      for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${fileOf(key)}${suffix}`, { force: true })
      return true
    },
    close: async () => { db.close() }
  }
}

function openRegistry (registryFile: string) {
  createOwnerOnly(registryFile)
  const db = new Database(registryFile)
  db.pragma('journal_mode = WAL')
  // A lost last-use time after a power loss only makes a tenant live longer.
  db.pragma('synchronous = NORMAL')
  db.exec(`CREATE TABLE IF NOT EXISTS tenants (
    key          TEXT    PRIMARY KEY,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL) STRICT`)
  db.exec('CREATE INDEX IF NOT EXISTS tenants_last_used ON tenants (last_used_at)')
  const sql = {
    exists: db.prepare<[string], unknown>('SELECT 1 FROM tenants WHERE key = ?').pluck(),
    insert: db.prepare<[string, number, number]>(
      'INSERT INTO tenants (key, created_at, last_used_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING'
    ),
    touch: db.prepare<[number, string]>('UPDATE tenants SET last_used_at = max(last_used_at, ?) WHERE key = ?'),
    count: db.prepare<[], number>('SELECT count(*) FROM tenants').pluck(),
    lru: db.prepare<[number, number], string>(
      'SELECT key FROM tenants WHERE last_used_at < ? ORDER BY last_used_at, key LIMIT ?').pluck(),
    remove: db.prepare<[string, number]>('DELETE FROM tenants WHERE key = ? AND last_used_at < ?')
  }
  return { db, sql }
}

/** Files a crash left without a registry row (created, never recorded) are deleted at start. */
function removeOrphans (dir: string, known: (key: string) => boolean): void {
  for (const name of readdirSync(dir)) {
    const key = /^([0-9a-f]{64})\.db(-wal|-shm|-journal)?$/.exec(name)?.[1]
    if (key !== undefined && !known(key)) rmSync(join(dir, name), { force: true })
  }
}
