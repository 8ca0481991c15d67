import type Database from 'better-sqlite3'
import type {
  ColumnValue, ColumnValues, CreateResult, IfMatch, Repository, ResourceDefinition, ResourceTypes, StoredRow
} from '../../resources/definition.js'
import { resourceEvent, type ResourceChange } from '../../webhooks/events.js'
import {
  decodeRowValues, declaredColumns, encodeRowValues, filtersOf, sameValues, valuesAt, valuesInOrder
} from '../row-values.js'
import { createOnce, settled, writableRow } from '../rules.js'
import { boundLimit } from './connection.js'
import { sqliteIdDrawer } from './ids.js'
import type { SqliteOutbox } from './outbox.js'
import type { EventOrigin } from '../../webhooks/origin.js'
import type { IdempotencyKey } from '../../resources/idempotency.js'

/** What a repository is given by the store that opened the database. */
export interface SqliteRepositoryContext {
  db: Database.Database
  /** Runs `write` in the group commit: answered once committed and, with full sync, on disk. */
  write: <T>(write: () => T) => Promise<T>
  /** Runs a read; its answer waits until what it may show is durable. */
  read: <T>(read: () => T) => T | Promise<T>
  outbox: SqliteOutbox
}

type Definition<R extends ResourceTypes> = ResourceDefinition<string, string, R>

interface KeyRow { fingerprint: string, id: bigint, row_values: string, created_at: bigint, updated_at: bigint }

/** Rows are read as arrays, not objects: see docs/performance.md#what-the-measurements-decided. */
type RawRow = unknown[]

function statementsOf (db: Database.Database, table: string, names: readonly string[]) {
  const columns = ['id', ...names, 'created_at', 'updated_at'].join(', ')
  const lists = new Map<string, Database.Statement<ColumnValue[], RawRow>>()
  return {
    read: db.prepare<[bigint], RawRow>(`SELECT ${columns} FROM ${table} WHERE id = ?`).raw(true),
    /** Keyset pagination, a deep page costs what the first one does; one statement per set of filters used. */
    list (filters: readonly string[]): Database.Statement<ColumnValue[], RawRow> {
      const key = filters.join(',')
      let statement = lists.get(key)
      if (statement === undefined) {
        const where = filters.map((column) => `${column} = ? AND `).join('')
        statement = db.prepare<ColumnValue[], RawRow>(
          `SELECT ${columns} FROM ${table} WHERE ${where}id > ? ORDER BY id LIMIT ${boundLimit()}`).raw(true)
        lists.set(key, statement)
      }
      return statement
    },
    insert: db.prepare<ColumnValue[], RawRow>(
      `INSERT INTO ${table} (${columns}) VALUES (${['?', ...names.map(() => '?'), '?', '?'].join(', ')}) ` +
        `RETURNING ${columns}`).raw(true),
    // updated_at strictly increases, even for two writes within one millisecond.
    update: db.prepare<ColumnValue[], RawRow>(
      `UPDATE ${table} SET ${names.map((name) => `${name} = ?, `).join('')}updated_at = max(?, updated_at + 1) ` +
        `WHERE id = ? RETURNING ${columns}`).raw(true),
    delete: db.prepare<[bigint], RawRow>(`DELETE FROM ${table} WHERE id = ? RETURNING ${columns}`).raw(true),
    findKey: db.prepare<[string, string, string, number], KeyRow>(
      'SELECT fingerprint, id, row_values, created_at, updated_at FROM idempotency_keys ' +
        'WHERE resource = ? AND scope = ? AND key = ? AND created_at > ?'),
    saveKey: db.prepare<[string, string, string, string, bigint, string, number, number], unknown>(
      'INSERT OR REPLACE INTO idempotency_keys ' +
        '(resource, scope, key, fingerprint, id, row_values, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    expireKeys: db.prepare<[number], unknown>('DELETE FROM idempotency_keys WHERE created_at <= ?')
  }
}

/** The transactions of a resource's writes, each with its event. */
function writesOf<R extends ResourceTypes> (
  definition: Definition<R>, { db, outbox }: SqliteRepositoryContext
) {
  const { storage, collection } = definition
  const names = declaredColumns(definition)
  const statements = statementsOf(db, collection, names)
  const draw = sqliteIdDrawer(db, { table: collection, resource: collection }, definition)
  const stored = (row: RawRow): StoredRow<ColumnValues> => ({
    id: row[0] as bigint,
    values: valuesAt(names, row, 1),
    createdAt: Number(row[names.length + 1]),
    updatedAt: Number(row[names.length + 2])
  })
  const storedOrNot = (row: RawRow | undefined): StoredRow<ColumnValues> | undefined =>
    row === undefined ? undefined : stored(row)
  const emit = (change: ResourceChange, item: R['item'], now: number, origin: EventOrigin | undefined): R['item'] => {
    outbox.emit(resourceEvent(definition, change, item, now, origin), now)
    return item
  }
  const current = (id: bigint, ifMatch: IfMatch | undefined): StoredRow<ColumnValues> =>
    writableRow(definition, id, storedOrNot(statements.read.get(id)), ifMatch, (row) => storage.item(row))
  const remembered = (key: KeyRow): R['item'] => storage.item({
    id: key.id,
    values: decodeRowValues(storage.columns, key.row_values),
    createdAt: Number(key.created_at),
    updatedAt: Number(key.updated_at)
  })
  const create = (
    item: R['create'], key: IdempotencyKey | undefined, origin: EventOrigin | undefined, admit: (() => void) | undefined
  ): CreateResult<R['item']> => {
    const now = Date.now()
    const values = valuesInOrder(names, storage.values(item))
    return settled(createOnce(key, now, {
      findKey: ({ scope, key }, cutoff) => statements.findKey.get(collection, scope, key, cutoff),
      remembered,
      expireKeys: (cutoff) => statements.expireKeys.run(cutoff),
      insert: () => draw(item.id, (id) => stored(statements.insert.get(id, ...values, now, now) as RawRow)),
      saveKey: ({ scope, key, fingerprint }, { id, values, createdAt, updatedAt }) =>
        statements.saveKey.run(collection, scope, key, fingerprint, id, encodeRowValues(values), createdAt, updatedAt),
      created: (row) => emit('created', storage.item(row), now, origin)
    }, admit))
  }
  type Next = (current: ColumnValues) => ColumnValues
  const change = (id: bigint, next: Next, ifMatch: IfMatch | undefined, origin: EventOrigin | undefined): R['item'] => {
    const row = current(id, ifMatch)
    const values = next(row.values)
    // A write that changes nothing changes nothing: same updatedAt (so the same ETag), no event.
    if (sameValues(names, values, row.values)) return storage.item(row)
    const now = Date.now()
    const changed = statements.update.get(...valuesInOrder(names, values), now, id) as RawRow
    return emit('updated', storage.item(stored(changed)), now, origin)
  }
  const remove = (id: bigint, ifMatch: IfMatch | undefined, origin: EventOrigin | undefined): R['item'] => {
    if (ifMatch !== undefined) current(id, ifMatch)
    const gone = storedOrNot(statements.delete.get(id))
    const row = writableRow(definition, id, gone, undefined, (removed) => storage.item(removed))
    return emit('deleted', storage.item(row), Date.now(), origin)
  }
  return {
    statements, stored, create: db.transaction(create), change: db.transaction(change), remove: db.transaction(remove)
  }
}

/** A resource's repository on SQLite, from its declaration (src/resource.ts, ResourceStorage). */
export function createSqliteRepository<R extends ResourceTypes> (
  definition: Definition<R>, context: SqliteRepositoryContext
): Repository<R> {
  const { write, read } = context
  const { storage } = definition
  const { statements, stored, create, change, remove } = writesOf(definition, context)
  return {
    async list (query) {
      const { columns, values } = filtersOf(storage, query)
      return await read(() => {
        const rows = statements.list(columns).all(...values, query.after ?? 0n, query.limit + 1)
        const items: Array<R['item']> = []
        for (let i = 0; i < rows.length && i < query.limit; i++) items.push(storage.item(stored(rows[i] as RawRow)))
        return { items, hasMore: rows.length > query.limit }
      })
    },
    async get (id) {
      return await read(() => {
        const row = statements.read.get(id)
        return row === undefined ? undefined : storage.item(stored(row))
      })
    },
    // Not async: the group commit's promise is the answer, without one more around it.
    create: (item, key, origin, admit) => write(() => create(item, key, origin, admit)),
    replace: (id, item, ifMatch, origin) => write(() => change(id, () => storage.values(item), ifMatch, origin)),
    update: (id, changes, ifMatch, origin) =>
      write(() => change(id, (values) => storage.update(values, changes), ifMatch, origin)),
    delete: (id, ifMatch, origin) => write(() => remove(id, ifMatch, origin))
  }
}
