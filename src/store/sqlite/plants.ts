import type Database from 'better-sqlite3'
import { idsExhausted, idTaken } from '../../errors.js'
import type { Plant } from '../../schemas/plant.js'
import { resourceEvent, type EventOrigin, type ResourceChange } from '../../webhooks/events.js'
import type { CreateResult } from '../../resource.js'
import {
  columnsToPlant, PLANT_COLUMNS, PLANTS, rememberedPlant, toPlant, type IdempotencyRow, type NewPlant, type PlantColumns, type PlantRepository, type PlantRow
} from '../../resources/plants.js'
import { createOnce, settled, writableRow } from '../rules.js'
import { MAX_ASSIGNED_ID, type IdempotencyKey, type IfMatch } from '../store.js'
import { boundLimit } from './connection.js'
import type { SqliteRepositoryContext } from './repository.js'

function plantStatements (db: Database.Database) {
  return {
    get: db.prepare<[bigint], PlantRow>('SELECT * FROM plants WHERE id = ?'),
    // Keyset pagination: a deep page costs what the first one does.
    read: db.prepare<[bigint], PlantColumns>(`SELECT ${PLANT_COLUMNS} FROM plants WHERE id = ?`).raw(true),
    list: db.prepare<[bigint, number], PlantColumns>(`SELECT ${PLANT_COLUMNS} FROM plants WHERE id > ? ORDER BY id LIMIT ${boundLimit()}`).raw(true),
    listByTag: db.prepare<[string, bigint, number], PlantColumns>(
      `SELECT ${PLANT_COLUMNS} FROM plants WHERE tag = ? AND id > ? ORDER BY id LIMIT ${boundLimit()}`).raw(true),
    insert: db.prepare<[bigint, string, string | null, number, number], PlantRow>(
      'INSERT INTO plants (id, name, tag, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING *'),
    // updated_at strictly increases, even for two writes within one millisecond.
    update: db.prepare<[string, string | null, number, bigint], PlantRow>(
      'UPDATE plants SET name = ?, tag = ?, updated_at = max(?, updated_at + 1) WHERE id = ? RETURNING *'),
    delete: db.prepare<[bigint], PlantRow>('DELETE FROM plants WHERE id = ? RETURNING *'),
    findKey: db.prepare<[string, string, number], IdempotencyRow>(
      'SELECT * FROM idempotency_keys WHERE scope = ? AND key = ? AND created_at > ?'),
    saveKey: db.prepare<[string, string, string, bigint, string, string | null, bigint, bigint], unknown>(
      'INSERT OR REPLACE INTO idempotency_keys VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    expireKeys: db.prepare<[number], unknown>('DELETE FROM idempotency_keys WHERE created_at <= ?')
  }
}

function idStatements (db: Database.Database) {
  return {
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
    forgetChosen: db.prepare<[bigint], unknown>('DELETE FROM chosen_ids WHERE id <= ?')
  }
}

/** Inserts a plant with its id: the one chosen, or the next the server assigns. */
function plantInserter (db: Database.Database, insert: ReturnType<typeof plantStatements>['insert']) {
  const ids = idStatements(db)
  return ({ id, name, tag }: NewPlant, now: number): PlantRow => {
    if (id === undefined) {
      const { last, next } = ids.nextId.get() as { last: bigint, next: bigint }
      if (next > MAX_ASSIGNED_ID) throw idsExhausted(PLANTS)
      // AUTOINCREMENT itself moves sqlite_sequence up to an inserted id above it: to `next`.
      const row = insert.get(next, name, tag ?? null, now, now) as PlantRow
      if (next > last + 1n) ids.forgetChosen.run(next)
      return row
    }
    const last = ids.lastId.get() as bigint
    let row: PlantRow
    try {
      row = insert.get(id, name, tag ?? null, now, now) as PlantRow
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw idTaken(PLANTS, id)
      throw err
    }
    if (id > last) {
      ids.setLastId.run(last)
      if (id <= MAX_ASSIGNED_ID) ids.noteChosen.run(id)
    }
    return row
  }
}

type NextValues = (row: PlantRow) => { name: string, tag: string | null }

/** The transactions of plant writes, each with its event. */
function plantWrites ({ db, outbox }: SqliteRepositoryContext) {
  const statements = plantStatements(db)
  const insertRow = plantInserter(db, statements.insert)
  const emit = (change: ResourceChange, plant: Plant, now: number, origin: EventOrigin | undefined): Plant => {
    outbox.emit(resourceEvent(PLANTS, change, plant, now, origin), now)
    return plant
  }
  const current = (id: bigint, ifMatch: IfMatch | undefined): PlantRow => writableRow(PLANTS, id, statements.get.get(id), ifMatch, toPlant)
  return {
    statements,
    create: db.transaction((plant: NewPlant, key: IdempotencyKey | undefined, origin: EventOrigin | undefined, admit: (() => void) | undefined): CreateResult<Plant> => {
      const now = Date.now()
      return settled(createOnce(key, now, {
        findKey: ({ scope, key }, cutoff) => statements.findKey.get(scope, key, cutoff),
        remembered: rememberedPlant,
        expireKeys: (cutoff) => statements.expireKeys.run(cutoff),
        insert: () => insertRow(plant, now),
        saveKey: ({ scope, key, fingerprint }, row) => statements.saveKey.run(scope, key, fingerprint, row.id, row.name, row.tag, row.created_at, row.updated_at),
        created: (row) => emit('created', toPlant(row), now, origin)
      }, admit))
    }),
    change: db.transaction((id: bigint, next: NextValues, ifMatch: IfMatch | undefined, origin: EventOrigin | undefined): Plant => {
      const row = current(id, ifMatch)
      const { name, tag } = next(row)
      // A write that changes nothing changes nothing: same updatedAt (so the same ETag), no event.
      if (name === row.name && tag === row.tag) return toPlant(row)
      const now = Date.now()
      return emit('updated', toPlant(statements.update.get(name, tag, now, id) as PlantRow), now, origin)
    }),
    remove: db.transaction((id: bigint, ifMatch: IfMatch | undefined, origin: EventOrigin | undefined): Plant => {
      if (ifMatch !== undefined) current(id, ifMatch)
      return emit('deleted', toPlant(writableRow(PLANTS, id, statements.delete.get(id), undefined, toPlant)), Date.now(), origin)
    })
  }
}

/** The plants repository on SQLite. */
export function createSqlitePlants (context: SqliteRepositoryContext): PlantRepository {
  const { write, read } = context
  const { statements, create, change, remove } = plantWrites(context)
  return {
    async list ({ limit, after, tag }) {
      return await read(() => {
        const rows = tag === undefined
          ? statements.list.all(after ?? 0n, limit + 1)
          : statements.listByTag.all(tag, after ?? 0n, limit + 1)
        const plants: Plant[] = []
        for (let i = 0; i < rows.length && i < limit; i++) plants.push(columnsToPlant(rows[i] as PlantColumns))
        return { items: plants, hasMore: rows.length > limit }
      })
    },
    async get (id) {
      return await read(() => {
        const columns = statements.read.get(id)
        return columns === undefined ? undefined : columnsToPlant(columns)
      })
    },
    // Not async: the group commit's promise is the answer, without one more around it.
    create: (plant, key, origin, admit) => write(() => create(plant, key, origin, admit)),
    replace: (id, { name, tag }, ifMatch, origin) => write(() => change(id, () => ({ name, tag: tag ?? null }), ifMatch, origin)),
    update: (id, changes, ifMatch, origin) => write(() => change(id, (row) => ({
      name: changes.name ?? row.name,
      tag: changes.tag === undefined ? row.tag : changes.tag
    }), ifMatch, origin)),
    delete: (id, ifMatch, origin) => write(() => remove(id, ifMatch, origin))
  }
}
