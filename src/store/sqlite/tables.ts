import type Database from 'better-sqlite3'
import type { ColumnKind, ResourceStorage } from '../../resource.js'
import { declaredColumns } from '../row-values.js'

const SQLITE_TYPES: Readonly<Record<ColumnKind, string>> = { text: 'TEXT', integer: 'INTEGER', real: 'REAL' }

/**
 * A served resource's table as its declaration describes it, made when the database has none yet
 * (the migrations made the plants table, with the same shape). AUTOINCREMENT: a deleted id is never
 * handed out again; the sequence's row exists from the start, as the id drawing reads it.
 */
export function ensureSqliteTable (db: Database.Database, storage: ResourceStorage): void {
  const { table } = storage
  const exists = db.prepare<[string], unknown>("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
    .get(table)
  if (exists !== undefined) return
  const columns = declaredColumns(storage).map((name) => {
    const { kind, nullable } = storage.columns[name] as ResourceStorage['columns'][string]
    return `${name} ${SQLITE_TYPES[kind]}${nullable ? '' : ' NOT NULL'}`
  })
  db.transaction(() => {
    db.exec(`CREATE TABLE ${table} (
               id INTEGER PRIMARY KEY AUTOINCREMENT, ${columns.join(', ')},
               created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT`)
    for (const { column } of storage.filters) db.exec(`CREATE INDEX ${table}_${column}_id ON ${table} (${column}, id)`)
    db.prepare<[string], unknown>('INSERT INTO sqlite_sequence (name, seq) VALUES (?, 0)').run(table)
  }).immediate()
}
