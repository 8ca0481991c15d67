import { StoreOpenError } from '../lib/errors.js'
import type { ColumnKind, ResourceStorage, StoredResource } from '../resources/definition.js'
import { columnOf, declaredColumns } from './row-values.js'

/** A column as the database describes it, its type in the store's own words; `defaulted`: inserts may omit it. */
export interface FoundColumn { readonly type: string, readonly nullable: boolean, readonly defaulted: boolean }

/** How a store writes a resource table's DDL: its column types, its tables' prefix, `IF NOT EXISTS ` or not. */
export interface TableDialect {
  readonly types: Readonly<Record<ColumnKind, string>>
  readonly prefix: string
  readonly ifNotExists: string
}

const nullability = (nullable: boolean): string => nullable ? 'nullable' : 'NOT NULL'

export function columnSql (storage: ResourceStorage, name: string, { types }: TableDialect): string {
  const { kind, nullable } = columnOf(storage, name)
  return `${name} ${types[kind]}${nullable ? '' : ' NOT NULL'}`
}

/** A filter's index: the id after the column, so a filtered page is a range scan. */
export const filterIndexSql = (table: string, column: string, { prefix, ifNotExists }: TableDialect): string =>
  `CREATE INDEX ${ifNotExists}${table}_${column}_id ON ${prefix}${table} (${column}, id)`

/** The DDL adding the missing nullable columns (refused when not `apply`); other drift refuses the start, named. */
export function reconcileTable (
  resource: StoredResource, found: ReadonlyMap<string, FoundColumn>, dialect: TableDialect, apply: boolean
): { statements: string[], added: string[] } {
  const { collection: table, storage } = resource
  const { types } = dialect
  const names = declaredColumns(resource)
  const missing: string[] = []
  const refuse = (column: string, problem: string): never => {
    throw new StoreOpenError(`the table ${table} does not match its declaration: the column ${column} ${problem}`)
  }
  for (const name of names) {
    const { kind, nullable } = columnOf(storage, name)
    const declared = `${types[kind]} ${nullability(nullable)}`
    const have = found.get(name)
    if (have === undefined) {
      if (!nullable) refuse(name, `is missing (declared ${declared}; only a nullable column is added at start)`)
      missing.push(name)
    } else if (have.type.toLowerCase() !== types[kind].toLowerCase() || have.nullable !== nullable) {
      refuse(name, `is ${have.type} ${nullability(have.nullable)}, declared ${declared}`)
    }
  }
  // An undeclared column that inserts may omit is a newer release's expand step: this one serves beside it.
  for (const [name, have] of found) {
    if (!['id', 'created_at', 'updated_at', ...names].includes(name) && !have.nullable && !have.defaulted) {
      refuse(name, 'is NOT NULL without a default and not declared: an insert would fail')
    }
  }
  if (!apply && missing.length > 0) {
    throw new StoreOpenError(`the table ${table} lacks the declared nullable column ${missing.join(', ')} and ` +
      'MIGRATE_ON_START=0: run `plant-store migrate` first (docs/upgrading.md)')
  }
  const alter = `ALTER TABLE ${dialect.prefix}${table} ADD COLUMN ${dialect.ifNotExists}`
  return {
    statements: [
      ...missing.map((name) => `${alter}${columnSql(storage, name, dialect)}`),
      ...storage.filters.filter(({ column }) => missing.includes(column))
        .map(({ column }) => filterIndexSql(table, column, dialect))
    ],
    added: missing.map((name) => `${table}.${name}`)
  }
}
