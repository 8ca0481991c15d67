import type Database from 'better-sqlite3'
import type { StoredResource } from '../../resources/definition.js'
import { declaredColumns } from '../row-values.js'
import { columnSql, filterIndexSql, reconcileTable, type FoundColumn, type TableDialect } from '../table-drift.js'

const SQLITE: TableDialect = { types: { text: 'TEXT', integer: 'INTEGER', real: 'REAL' }, prefix: '', ifNotExists: '' }

interface ColumnInfo { name: string, type: string, notnull: number | bigint, dflt_value: unknown }

/** A resource's table, made as declared when missing, else reconciled with it; returns the columns added. */
export function ensureSqliteTable (db: Database.Database, resource: StoredResource, apply: boolean): string[] {
  const { collection: table, storage } = resource
  const info = db.prepare<[string], ColumnInfo>('SELECT * FROM pragma_table_info(?)').all(table)
  if (info.length > 0) {
    const found = new Map<string, FoundColumn>(info.map(({ name, type, notnull, dflt_value: dflt }) =>
      [name, { type, nullable: Number(notnull) === 0, defaulted: dflt !== null }]))
    const { statements, added } = reconcileTable(resource, found, SQLITE, apply)
    if (statements.length > 0) db.transaction(() => { for (const sql of statements) db.exec(sql) }).immediate()
    return added
  }
  const columns = declaredColumns(resource).map((name) => columnSql(storage, name, SQLITE))
  // AUTOINCREMENT: a deleted id is never handed out again; the id drawing reads the sequence's row.
  db.transaction(() => {
    db.exec(`CREATE TABLE ${table} (
               id INTEGER PRIMARY KEY AUTOINCREMENT, ${columns.join(', ')},
               created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT`)
    for (const { column } of storage.filters) db.exec(filterIndexSql(table, column, SQLITE))
    db.prepare<[string], unknown>('INSERT INTO sqlite_sequence (name, seq) VALUES (?, 0)').run(table)
  }).immediate()
  return []
}
