import type {
  ColumnsDeclaration, ColumnValue, ColumnValues, ResourceStorage, ResourceTypes, StoredResource
} from '../resources/definition.js'

/** Names a store writes into SQL unquoted: they come from declarations, never from a request. */
const IDENTIFIER = /^[a-z][a-z0-9_]{0,62}$/
const RESERVED = new Set(['id', 'created_at', 'updated_at'])

/** The declared columns in table order; a name SQL could misread, or a filter on no column, is refused here. */
export function declaredColumns ({ collection: table, storage }: StoredResource): readonly string[] {
  const names = Object.keys(storage.columns)
  for (const name of [table, ...names]) {
    if (!IDENTIFIER.test(name)) throw new Error(`${name} is not a plain SQL identifier (a-z, 0-9, _)`)
  }
  for (const name of names) {
    if (RESERVED.has(name)) throw new Error(`${table}.${name}: every resource table has it already`)
  }
  for (const { column } of storage.filters) {
    if (!names.includes(column)) throw new Error(`${table}: the filter on ${column} names no declared column`)
  }
  return names
}

/** The declaration of a column declaredColumns names. */
export const columnOf = ({ columns }: ResourceStorage, name: string): ColumnsDeclaration[string] =>
  columns[name] as ColumnsDeclaration[string]

/** The list's filters `query` sets, in declaration order: their columns and their values. */
export function filtersOf<R extends ResourceTypes> (storage: ResourceStorage<R>, query: R['query']) {
  const columns: string[] = []
  const values: ColumnValue[] = []
  for (const filter of storage.filters) {
    const value = filter.value(query)
    if (value === undefined) continue
    columns.push(filter.column)
    values.push(value)
  }
  return { columns, values }
}

export const valuesInOrder = (names: readonly string[], values: ColumnValues): ColumnValue[] =>
  names.map((name) => values[name] ?? null)

/** The values named by `names` from a row read as an array, starting at `from`. */
export function valuesAt (names: readonly string[], row: readonly unknown[], from: number): ColumnValues {
  const values: Record<string, unknown> = {}
  for (let i = 0; i < names.length; i++) values[names[i] as string] = row[from + i]
  // The database enforced the declared kinds and nullability when the row was written.
  return values as ColumnValues
}

export const sameValues = (names: readonly string[], a: ColumnValues, b: ColumnValues): boolean =>
  names.every((name) => a[name] === b[name])

/** As an idempotency key keeps them: a JSON object by column, int64s as strings (a JSON number would round). */
export const encodeRowValues = (values: ColumnValues): string =>
  JSON.stringify(values, (_key, value: unknown) => typeof value === 'bigint' ? value.toString() : value)

export function decodeRowValues (columns: ColumnsDeclaration, json: string): ColumnValues {
  const parsed = JSON.parse(json) as Record<string, string | number | null | undefined>
  const values: ColumnValues = {}
  for (const [name, { kind }] of Object.entries(columns)) {
    const value = parsed[name] ?? null
    if (value === null) values[name] = null
    else values[name] = kind === 'integer' ? BigInt(value) : kind === 'real' ? Number(value) : String(value)
  }
  return values
}
