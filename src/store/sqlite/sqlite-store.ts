import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { idempotencyKeyReused, idsExhausted, plantIdTaken, ServiceError, StoreOpenError } from '../../errors.js'
import type { Plant } from '../../schemas/plant.js'
import {
  IDEMPOTENCY_TTL_MS, MAX_ASSIGNED_ID,
  type CreateResult, type IdempotencyKey, type IfMatch, type ListPage, type ListQuery,
  type NewPlant, type PlantChanges, type PlantStore, type StoreLog
} from '../store.js'
import {
  columnsToPlant, PLANT_COLUMNS, rememberedPlant, toPlant, writableRow,
  type IdempotencyRow, type PlantColumns, type PlantRow
} from '../rows.js'
import { boundLimit, configureConnection, createOwnerOnly } from './connection.js'
import { startCheckpointer, type CheckpointerOptions } from './checkpointer.js'
import { createFileCheck, sqliteFailure } from './failures.js'
import { createGroupCommit, type GroupCommitOptions } from './group-commit.js'
import { APPLICATION_ID, migrations } from './migrations.js'
import { identityProblem, inspectDatabaseFile, readIdentity } from './preflight.js'
import { createSqliteWebhookStore, enqueueSqliteEvent } from './webhook-store.js'
import type { EventOrigin, WebhookEventType } from '../../webhooks/events.js'

export const SQLITE_SYNCHRONOUS = ['full', 'normal'] as const
export type SqliteSynchronous = (typeof SQLITE_SYNCHRONOUS)[number]

export interface SqliteStoreOptions {
  filename: string
  synchronous?: SqliteSynchronous
  onCommit?: (writes: number) => void
  onSync?: (durationMs: number) => void
  log?: StoreLog
  fdatasync?: GroupCommitOptions['fdatasync']
  /** `false` leaves WAL checkpoints to SQLite, on the event loop. */
  checkpoint?: Omit<CheckpointerOptions, 'log'> | false
}

/** Room for a few dozen plants' WAL frames: a write of one page can fit where a failed one left space. */
const PROBE_BYTES = 64 * 1024

function openDatabase (filename: string): Database.Database {
  if (filename !== ':memory:') {
    mkdirSync(dirname(filename), { recursive: true })
    createOwnerOnly(filename)
  }
  return configureConnection(new Database(filename))
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
    // Keyset pagination: a deep page costs what the first one does.
    read: db.prepare<[bigint], PlantColumns>(`SELECT ${PLANT_COLUMNS} FROM plants WHERE id = ?`).raw(true),
    list: db.prepare<[bigint, number], PlantColumns>(`SELECT ${PLANT_COLUMNS} FROM plants WHERE id > ? ORDER BY id LIMIT ${boundLimit()}`).raw(true),
    listByTag: db.prepare<[string, bigint, number], PlantColumns>(
      `SELECT ${PLANT_COLUMNS} FROM plants WHERE tag = ? AND id > ? ORDER BY id LIMIT ${boundLimit()}`).raw(true),
    insert: db.prepare<[bigint, string, string | null, number, number], PlantRow>(
      'INSERT INTO plants (id, name, tag, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING *'),
    // The id assigned next: the one after the last, or the first free one after the run of taken ids.
    nextId: db.prepare<[], { last: bigint, next: bigint }>(`
      SELECT seq AS last, CASE
        WHEN NOT EXISTS (SELECT 1 FROM plants WHERE id = seq + 1) AND NOT EXISTS (SELECT 1 FROM chosen_ids WHERE id = seq + 1) THEN seq + 1
        ELSE (SELECT id + 1 FROM (SELECT id FROM plants WHERE id > seq UNION SELECT id FROM chosen_ids WHERE id > seq) AS taken
              WHERE NOT EXISTS (SELECT 1 FROM plants WHERE id = taken.id + 1)
                AND NOT EXISTS (SELECT 1 FROM chosen_ids WHERE id = taken.id + 1)
              ORDER BY id LIMIT 1)
      END AS next
      FROM sqlite_sequence WHERE name = 'plants'`),
    lastId: db.prepare<[], bigint>("SELECT seq FROM sqlite_sequence WHERE name = 'plants'").pluck(),
    setLastId: db.prepare<[bigint], unknown>("UPDATE sqlite_sequence SET seq = ? WHERE name = 'plants'"),
    // A chosen id the sequence has yet to reach is remembered, so it is skipped even once deleted.
    noteChosen: db.prepare<[bigint], unknown>('INSERT OR IGNORE INTO chosen_ids (id) VALUES (?)'),
    forgetChosen: db.prepare<[bigint], unknown>('DELETE FROM chosen_ids WHERE id <= ?'),
    writeProbe: db.prepare<[number], unknown>('INSERT OR REPLACE INTO write_probe (id, data) VALUES (1, zeroblob(?))'),
    clearProbe: db.prepare('DELETE FROM write_probe'),
    // updated_at strictly increases, even for two writes within one millisecond.
    update: db.prepare<[string, string | null, number, bigint], PlantRow>(
      'UPDATE plants SET name = ?, tag = ?, updated_at = max(?, updated_at + 1) WHERE id = ? RETURNING *'),
    delete: db.prepare<[bigint], PlantRow>('DELETE FROM plants WHERE id = ? RETURNING *'),
    findKey: db.prepare<[string, string, number], IdempotencyRow>(
      'SELECT * FROM idempotency_keys WHERE scope = ? AND key = ? AND created_at > ?'),
    saveKey: db.prepare<[string, string, string, bigint, string, string | null, bigint, bigint], unknown>(
      'INSERT OR REPLACE INTO idempotency_keys VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    expireKeys: db.prepare<[number], unknown>('DELETE FROM idempotency_keys WHERE created_at <= ?'),
    ping: db.prepare('SELECT 1').pluck(),
    enabledEvents: db.prepare<[], string>('SELECT DISTINCT events FROM webhook_subscriptions WHERE disabled = 0').pluck(),
    dataVersion: db.prepare<[], bigint>('PRAGMA data_version').pluck()
  }

  let eventsWritten = false
  const wakers = new Set<() => void>()

  // The event types enabled subscriptions asked for, so a write whose type none asked for skips its
  // event. Forgotten on subscription changes, on another connection's commit (data_version) and on
  // a failed batch (it may have been read in a transaction that rolled back).
  let wantedTypes: Set<string> | undefined
  let wantedTypesVersion: bigint | undefined
  /** The transactional outbox: the event commits and rolls back with the change. */
  const emit = (type: WebhookEventType, plant: Plant, now: number, origin: EventOrigin | undefined): Plant => {
    const version = statements.dataVersion.get() as bigint
    if (wantedTypes === undefined || version !== wantedTypesVersion) {
      wantedTypes = new Set(statements.enabledEvents.all().flatMap((events) => events.split(' ')))
      wantedTypesVersion = version
    }
    if (!wantedTypes.has(type)) return plant
    enqueueSqliteEvent(db, { type, plant, occurredAt: now, ...(origin !== undefined && { origin }) }, now)
    eventsWritten = true
    return plant
  }

  const write = db.transaction((id: bigint, next: (row: PlantRow) => { name: string, tag: string | null }, ifMatch?: IfMatch, origin?: EventOrigin): Plant => {
    const current = writableRow(id, statements.get.get(id), ifMatch)
    const { name, tag } = next(current)
    // A write that changes nothing changes nothing: same updatedAt (so the same ETag), no event.
    if (name === current.name && tag === current.tag) return toPlant(current)
    const now = Date.now()
    return emit('plant.updated', toPlant(statements.update.get(name, tag, now, id) as PlantRow), now, origin)
  })

  const insert = db.transaction(({ id, name, tag }: NewPlant, idempotency?: IdempotencyKey, origin?: EventOrigin): CreateResult => {
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
    if (id === undefined) {
      const { last, next } = statements.nextId.get() as { last: bigint, next: bigint }
      if (next > MAX_ASSIGNED_ID) throw idsExhausted()
      // AUTOINCREMENT itself moves sqlite_sequence up to an inserted id above it: to `next`.
      row = statements.insert.get(next, name, tag ?? null, now, now) as PlantRow
      if (next > last + 1n) statements.forgetChosen.run(next)
    } else {
      const last = statements.lastId.get() as bigint
      try {
        row = statements.insert.get(id, name, tag ?? null, now, now) as PlantRow
      } catch (err) {
        if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw plantIdTaken(id)
        throw err
      }
      if (id > last) {
        statements.setLastId.run(last)
        if (id <= MAX_ASSIGNED_ID) statements.noteChosen.run(id)
      }
    }
    if (idempotency !== undefined) {
      const { scope, key, fingerprint } = idempotency
      statements.saveKey.run(scope, key, fingerprint, row.id, row.name, row.tag, row.created_at, row.updated_at)
    }
    return { plant: emit('plant.created', toPlant(row), now, origin), replayed: false }
  })

  const remove = db.transaction((id: bigint, ifMatch?: IfMatch, origin?: EventOrigin): Plant => {
    if (ifMatch !== undefined) writableRow(id, statements.get.get(id), ifMatch)
    return emit('plant.deleted', toPlant(writableRow(id, statements.delete.get(id), undefined)), Date.now(), origin)
  })

  const writeProbe = db.transaction(() => { statements.writeProbe.run(PROBE_BYTES) })
  const clearProbe = db.transaction(() => { statements.clearProbe.run() })

  const { filename, onCommit, onSync, log } = options
  const inFile = filename !== ':memory:'
  const file = inFile
    ? createFileCheck(filename, (error) => { log?.error({ err: error.cause }, 'the database file was deleted or replaced: writes, reads and /health answer 503 until a restart') })
    : undefined

  // Why writes fail right now: /health retries with a probe write, so the store recovers by itself.
  let trouble: ServiceError | undefined

  const failure = (err: unknown): unknown => {
    // A batch SQLite failed rolled back whatever it read about subscriptions too.
    if (!(err instanceof ServiceError)) wantedTypes = undefined
    const error = err instanceof ServiceError ? undefined : sqliteFailure(err)
    if (error === undefined) return err
    if (trouble?.code !== error.code) log?.error({ err, code: error.code }, 'database writes fail')
    trouble = error
    return error
  }

  // Writes are group-committed: those that arrive together share one transaction and one fsync.
  const durable = (options.synchronous ?? 'full') === 'full' && inFile
  const writes = createGroupCommit(db, {
    ...(durable && { walFile: `${filename}-wal` }),
    onCommit: (count) => {
      if (trouble !== undefined) log?.info({ code: trouble.code }, 'database writes work again')
      trouble = undefined
      onCommit?.(count)
      if (eventsWritten) {
        eventsWritten = false
        for (const wake of wakers) wake()
      }
    },
    ...(onSync !== undefined && { onSync }),
    ...(options.fdatasync !== undefined && { fdatasync: options.fdatasync }),
    // One check per batch that the file is still there: a write is never acknowledged into a gone file.
    ...(file !== undefined && { verify: () => { file.verify(true) } }),
    report: failure
  })

  const checkpointer = inFile && options.checkpoint !== false
    ? startCheckpointer(db, filename, { ...options.checkpoint, ...(log !== undefined && { log }) })
    : undefined

  // Webhook writes share the group commit: as durable as plant writes.
  const webhooks = createSqliteWebhookStore({
    db,
    write: async (transaction, options) => await writes.enqueue(transaction, options),
    afterDurable: writes.afterDurable,
    onSubscriptionsChanged: () => { wantedTypes = undefined },
    listen: async (wake) => {
      wakers.add(wake)
      return async () => { wakers.delete(wake) }
    }
  })

  return {
    webhooks,

    async ping () {
      try {
        file?.verify(true)
        statements.ping.get()
      } catch (err) {
        throw failure(err)
      }
      await writes.afterDurable(undefined)
      if (trouble !== undefined) {
        await writes.enqueue(writeProbe)
        await writes.enqueue(clearProbe)
      }
    },

    async list ({ limit, after, tag }: ListQuery): Promise<ListPage> {
      try {
        file?.verify()
        const rows = tag === undefined
          ? statements.list.all(after ?? 0n, limit + 1)
          : statements.listByTag.all(tag, after ?? 0n, limit + 1)
        const plants: Plant[] = []
        for (let i = 0; i < rows.length && i < limit; i++) plants.push(columnsToPlant(rows[i] as PlantColumns))
        return writes.afterDurable({ plants, hasMore: rows.length > limit })
      } catch (err) {
        throw failure(err)
      }
    },

    async get (id: bigint) {
      try {
        file?.verify()
        const columns = statements.read.get(id)
        return writes.afterDurable(columns === undefined ? undefined : columnsToPlant(columns))
      } catch (err) {
        throw failure(err)
      }
    },

    create (plant: NewPlant, idempotency?: IdempotencyKey, origin?: EventOrigin) {
      return writes.enqueue(() => insert(plant, idempotency, origin))
    },

    replace (id: bigint, { name, tag }: Omit<NewPlant, 'id'>, ifMatch?: IfMatch, origin?: EventOrigin) {
      return writes.enqueue(() => write(id, () => ({ name, tag: tag ?? null }), ifMatch, origin))
    },

    update (id: bigint, changes: PlantChanges, ifMatch?: IfMatch, origin?: EventOrigin) {
      return writes.enqueue(() => write(id, (row) => ({
        name: changes.name ?? row.name,
        tag: changes.tag === undefined ? row.tag : changes.tag
      }), ifMatch, origin))
    },

    delete (id: bigint, ifMatch?: IfMatch, origin?: EventOrigin) {
      return writes.enqueue(() => remove(id, ifMatch, origin))
    },

    async close () {
      if (!db.open) return
      await writes.close()
      await checkpointer?.close()
      // Fold the WAL back so a stopped service leaves one file; on failure SQLite replays it at the next start.
      if (inFile) {
        try {
          db.pragma('wal_checkpoint(TRUNCATE)')
        } catch (err) {
          log?.error({ err }, 'the database could not be checkpointed at close; its WAL is kept and replayed at the next start')
        }
      }
      db.close()
    }
  }
}
