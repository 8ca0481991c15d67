import type Database from 'better-sqlite3'
import type { ColumnKind, ResourceStorage } from '../../resources/definition.js'
import { declaredColumns } from '../row-values.js'
import { columnsToAdd, type FoundColumn } from '../table-drift.js'

const SQLITE_TYPES: Readonly<Record<ColumnKind, string>> = { text: 'TEXT', integer: 'INTEGER', real: 'REAL' }

const sqliteType = (storage: ResourceStorage, name: string): string =>
  SQLITE_TYPES[(storage.columns[name] as ResourceStorage['columns'][string]).kind]

interface ColumnInfo { name: string, type: string, notnull: number | bigint, dflt_value: unknown }

/**
 * A served resource's table as its declaration describes it, made when the database has none yet
 * (the migrations made the plants table, with the same shape). AUTOINCREMENT: a deleted id is never
 * handed out again; the sequence's row exists from the start, as the id drawing reads it. An existing
 * table gets the declared nullable columns it lacks (`apply`) and is checked against the declaration
 * (table-drift.ts); the columns added are returned as `table.column`.
 */
export function ensureSqliteTable (db: Database.Database, storage: ResourceStorage, apply: boolean): string[] {
  const { table } = storage
  const info = db.prepare<[string], ColumnInfo>('SELECT * FROM pragma_table_info(?)')
    .all(table)
  if (info.length > 0) {
    const found = new Map<string, FoundColumn>(info.map(({ name, type, notnull, dflt_value: dflt }) =>
      [name, { type, nullable: Number(notnull) === 0, defaulted: dflt !== null }]))
    const missing = columnsToAdd(storage, found, SQLITE_TYPES, apply)
    if (missing.length === 0) return []
    db.transaction(() => {
      for (const name of missing) db.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${sqliteType(storage, name)}`)
      for (const { column } of storage.filters.filter(({ column }) => missing.includes(column))) {
        db.exec(`CREATE INDEX ${table}_${column}_id ON ${table} (${column}, id)`)
      }
    }).immediate()
    return missing.map((name) => `${table}.${name}`)
  }
  const columns = declaredColumns(storage).map((name) =>
    `${name} ${sqliteType(storage, name)}${storage.columns[name]?.nullable === true ? '' : ' NOT NULL'}`)
  db.transaction(() => {
    db.exec(`CREATE TABLE ${table} (
               id INTEGER PRIMARY KEY AUTOINCREMENT, ${columns.join(', ')},
               created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT`)
    for (const { column } of storage.filters) db.exec(`CREATE INDEX ${table}_${column}_id ON ${table} (${column}, id)`)
    db.prepare<[string], unknown>('INSERT INTO sqlite_sequence (name, seq) VALUES (?, 0)').run(table)
  }).immediate()
  return []
}
