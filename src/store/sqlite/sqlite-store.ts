import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { idempotencyKeyReused, plantIdTaken, StoreOpenError } from '../../errors.js'
import type { Plant } from '../../schemas/plant.js'
import {
  IDEMPOTENCY_TTL_MS,
  type CreateResult, type IdempotencyKey, type IfMatch, type ListPage, type ListQuery,
  type NewPlant, type PlantChanges, type PlantStore
} from '../store.js'
import { rememberedPlant, toPlant, writableRow, type IdempotencyRow, type PlantRow } from '../rows.js'
import { createGroupCommit } from './group-commit.js'
import { APPLICATION_ID, migrations } from './migrations.js'
import { identityProblem, inspectDatabaseFile, readIdentity } from './preflight.js'

/** SQLite durability levels: `full` survives a power loss, `normal` a process crash. */
export const SQLITE_SYNCHRONOUS = ['full', 'normal'] as const
export type SqliteSynchronous = (typeof SQLITE_SYNCHRONOUS)[number]

export interface SqliteStoreOptions {
  /** A file path, or `:memory:`. */
  filename: string
  /** `full` (default) survives a power loss; `normal` survives a process crash. */
  synchronous?: SqliteSynchronous
  /** Called after each committed write transaction with the number of writes it held (for tests and metrics). */
  onCommit?: (writes: number) => void
  /** Called after each fdatasync of the WAL under `full`, with its duration (for tests and metrics). */
  onSync?: (durationMs: number) => void
}

function openDatabase (filename: string): Database.Database {
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true })
  const db = new Database(filename)
  // Ids are int64: read every INTEGER as a bigint so nothing is rounded on the way back.
  db.defaultSafeIntegers(true)
  db.pragma('journal_mode = WAL')
  // NORMAL: WAL appends without an fsync each, still consistent after a crash. For `full`, the
  // group commit adds one fdatasync of the WAL per group before anything is answered.
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
  return db
}

function migrate (db: Database.Database): void {
  // Read again on the writable connection: another process may have changed the file since the preflight.
  const identity = readIdentity(db)
  const problem = identityProblem(identity)
  if (problem !== undefined) throw new StoreOpenError(problem)
  const { version } = identity
  const upgrade = db.transaction(() => {
    for (let step = version; step < migrations.length; step++) {
      db.exec(migrations[step] as string)
    }
    db.pragma(`application_id = ${APPLICATION_ID}`)
    db.pragma(`user_version = ${migrations.length}`)
  })
  if (version < migrations.length) upgrade.immediate()
}

/** The embedded store: one SQLite file in WAL mode, statements prepared once. */
export function createSqliteStore (options: SqliteStoreOptions): PlantStore {
  const problem = inspectDatabaseFile(options.filename)
  if (problem !== undefined) throw new StoreOpenError(problem)
  const db = openDatabase(options.filename)
  try {
    migrate(db)
  } catch (err) {
    db.close()
    throw err
  }

  const statements = {
    get: db.prepare<[bigint], PlantRow>('SELECT * FROM plants WHERE id = ?'),
    // Keyset pagination: a range scan from the cursor, so a deep page costs what the first one does.
    list: db.prepare<[bigint, number], PlantRow>('SELECT * FROM plants WHERE id > ? ORDER BY id LIMIT ?'),
    listByTag: db.prepare<[string, bigint, number], PlantRow>(
      'SELECT * FROM plants WHERE tag = ? AND id > ? ORDER BY id LIMIT ?'),
    insert: db.prepare<[bigint | null, string, string | null, number, number], PlantRow>(
      'INSERT INTO plants (id, name, tag, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING *'),
    // updated_at strictly increases, even for two writes within one millisecond.
    update: db.prepare<[string, string | null, number, bigint], PlantRow>(
      'UPDATE plants SET name = ?, tag = ?, updated_at = max(?, updated_at + 1) WHERE id = ? RETURNING *'),
    delete: db.prepare<[bigint], PlantRow>('DELETE FROM plants WHERE id = ? RETURNING *'),
    findKey: db.prepare<[string, string, number], IdempotencyRow>(
      'SELECT * FROM idempotency_keys WHERE scope = ? AND key = ? AND created_at > ?'),
    saveKey: db.prepare<[string, string, string, bigint, string, string | null, bigint, bigint], unknown>(
      'INSERT OR REPLACE INTO idempotency_keys VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    expireKeys: db.prepare<[number], unknown>('DELETE FROM idempotency_keys WHERE created_at <= ?'),
    ping: db.prepare('SELECT 1').pluck()
  }

  const write = db.transaction((id: bigint, next: (row: PlantRow) => { name: string, tag: string | null }, ifMatch?: IfMatch): Plant => {
    const { name, tag } = next(writableRow(id, statements.get.get(id), ifMatch))
    return toPlant(statements.update.get(name, tag, Date.now(), id) as PlantRow)
  })

  const insert = db.transaction(({ id, name, tag }: NewPlant, idempotency?: IdempotencyKey): CreateResult => {
    const now = Date.now()
    if (idempotency !== undefined) {
      const earlier = statements.findKey.get(idempotency.scope, idempotency.key, now - IDEMPOTENCY_TTL_MS)
      if (earlier !== undefined) {
        if (earlier.fingerprint !== idempotency.fingerprint) throw idempotencyKeyReused()
        return { plant: rememberedPlant(earlier), replayed: true }
      }
      statements.expireKeys.run(now - IDEMPOTENCY_TTL_MS)
    }
    let row: PlantRow
    try {
      row = statements.insert.get(id ?? null, name, tag ?? null, now, now) as PlantRow
    } catch (err) {
      if (id !== undefined && (err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
        throw plantIdTaken(id)
      }
      throw err
    }
    if (idempotency !== undefined) {
      const { scope, key, fingerprint } = idempotency
      statements.saveKey.run(scope, key, fingerprint, row.id, row.name, row.tag, row.created_at, row.updated_at)
    }
    return { plant: toPlant(row), replayed: false }
  })

  const remove = db.transaction((id: bigint, ifMatch?: IfMatch): Plant => {
    // Without If-Match there is nothing to check first: the delete itself says whether the plant was there.
    if (ifMatch !== undefined) writableRow(id, statements.get.get(id), ifMatch)
    return toPlant(writableRow(id, statements.delete.get(id), undefined))
  })

  // Writes are group-committed: those that arrive together share one transaction and one fsync.
  const durable = (options.synchronous ?? 'full') === 'full' && options.filename !== ':memory:'
  const { onCommit, onSync } = options
  const writes = createGroupCommit(db, {
    ...(durable && { walFile: `${options.filename}-wal` }),
    ...(onCommit !== undefined && { onCommit }),
    ...(onSync !== undefined && { onSync })
  })

  return {
    async ping () {
      statements.ping.get()
      // Rejects too once a sync of the WAL has failed: the service can no longer promise durability.
      await writes.afterDurable(undefined)
    },

    async list ({ limit, after, tag }: ListQuery): Promise<ListPage> {
      // One row more than asked tells whether another page follows.
      // Ids are positive, so "after 0" is the first page.
      const rows = tag === undefined
        ? statements.list.all(after ?? 0n, limit + 1)
        : statements.listByTag.all(tag, after ?? 0n, limit + 1)
      return writes.afterDurable({ plants: rows.slice(0, limit).map(toPlant), hasMore: rows.length > limit })
    },

    async get (id: bigint) {
      const row = statements.get.get(id)
      return writes.afterDurable(row === undefined ? undefined : toPlant(row))
    },

    create (plant: NewPlant, idempotency?: IdempotencyKey) {
      return writes.enqueue(() => insert(plant, idempotency))
    },

    replace (id: bigint, { name, tag }: Omit<NewPlant, 'id'>, ifMatch?: IfMatch) {
      return writes.enqueue(() => write(id, () => ({ name, tag: tag ?? null }), ifMatch))
    },

    update (id: bigint, changes: PlantChanges, ifMatch?: IfMatch) {
      return writes.enqueue(() => write(id, (row) => ({
        name: changes.name ?? row.name,
        tag: changes.tag === undefined ? row.tag : changes.tag
      }), ifMatch))
    },

    delete (id: bigint, ifMatch?: IfMatch) {
      return writes.enqueue(() => remove(id, ifMatch))
    },

    async close () {
      if (!db.open) return
      await writes.close()
      // Fold the WAL back into the main file so a stopped service leaves one self-contained file.
      if (options.filename !== ':memory:') db.pragma('wal_checkpoint(TRUNCATE)')
      db.close()
    }
  }
}
