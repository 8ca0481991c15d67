import pg from 'pg'
import type {
  ColumnKind, ColumnValue, ColumnValues, ResourceDefinition, StoredRow
} from '../../resources/definition.js'
import { isoTime } from '../iso-time.js'
import { columnOf, declaredColumns } from '../row-values.js'

// A row's event data as SQL for the one-statement delete: the JSON of a row of markers, the values filled in by
// SQL as JavaScript writes them. A resource whose JSON cannot be made so has its deletes lock the row first.

/** Nulls only in nullable columns (the shapes and samples put them there). */
type Row = StoredRow<ColumnValues>

type Part = { text: string } | { value: Value }

type Value = { of: 'id' } | { of: 'column', name: string, kind: Exclude<ColumnKind, 'real'> } |
  { of: 'time', column: 'created_at' | 'updated_at' }

/** Nullable columns past this make too many shapes (one for each set of nulls): such a resource has none. */
const MAX_NULLABLE = 4

const MARK_ID = 4_503_599_627_370_449n
const MARK_CREATED = 1_262_304_000_123
const MARK_UPDATED = 1_293_840_000_456
const markText = (i: number): string => `\u2060mark${i}\u2060`
const markInteger = (i: number): bigint => 7_770_000_000_000_000n + BigInt(i)

/** How JavaScript writes a value into the JSON: what the SQL must give, byte for byte. */
function written (value: Value, row: Row): string {
  if (value.of === 'id') return String(row.id)
  if (value.of === 'time') return JSON.stringify(isoTime(value.column === 'created_at' ? row.createdAt : row.updatedAt))
  const own = row.values[value.name]
  return value.kind === 'text' ? JSON.stringify(own) : String(own)
}

/** The JSON of the row of markers with `nulls` null, split at each marker (each must appear exactly once). */
function shape (resource: ResourceDefinition, nulls: ReadonlySet<string>): Part[] | undefined {
  const values: Record<string, ColumnValue> = {}
  const slots: Array<{ mark: string, value: Value }> = [{ mark: String(MARK_ID), value: { of: 'id' } }]
  for (const [i, name] of declaredColumns(resource).entries()) {
    const { kind } = columnOf(resource.storage, name)
    if (kind === 'real') return undefined
    if (nulls.has(name)) {
      values[name] = null
      continue
    }
    values[name] = kind === 'text' ? markText(i) : markInteger(i)
    const mark = kind === 'text' ? JSON.stringify(markText(i)) : String(markInteger(i))
    slots.push({ mark, value: { of: 'column', name, kind } })
  }
  slots.push({ mark: JSON.stringify(isoTime(MARK_CREATED)), value: { of: 'time', column: 'created_at' } },
    { mark: JSON.stringify(isoTime(MARK_UPDATED)), value: { of: 'time', column: 'updated_at' } })
  const marked = { id: MARK_ID, values: values as ColumnValues, createdAt: MARK_CREATED, updatedAt: MARK_UPDATED }
  const json = resource.json(resource.storage.item(marked))
  const found = slots.map((slot) => ({ ...slot, at: json.indexOf(slot.mark) }))
  if (found.some(({ mark, at }) => at < 0 || json.indexOf(mark, at + 1) >= 0)) return undefined
  found.sort((a, b) => a.at - b.at)
  const parts: Part[] = []
  let from = 0
  for (const { mark, value, at } of found) {
    if (at < from) return undefined
    parts.push({ text: json.slice(from, at) }, { value })
    from = at + mark.length
  }
  parts.push({ text: json.slice(from) })
  return parts
}

/** Rows unlike the markers (quotes, escapes, non-ASCII, equal and unequal times) the shapes must reproduce. */
function samples (resource: ResourceDefinition, nulls: ReadonlySet<string>): Array<Row> {
  const texts = ['a "quoted" \\ back\nslash\t\u0001 é 😀 \u2028', 'plain']
  return texts.map((text, i) => {
    const values: Record<string, ColumnValue> = {}
    for (const name of declaredColumns(resource)) {
      const { kind } = columnOf(resource.storage, name)
      // Past 2^53 an integer a resource turns into a number would be rounded in JavaScript, never in SQL.
      values[name] = nulls.has(name) ? null : kind === 'text' ? `${text}${name}` : i === 0 ? -42n : 2n ** 60n + 1n
    }
    const createdAt = 1_764_000_000_000 + i
    const updatedAt = i === 0 ? createdAt : createdAt + 1
    return { id: BigInt(9 + i), values: values as ColumnValues, createdAt, updatedAt }
  })
}

function nullSets (nullable: readonly string[]): Array<Set<string>> {
  return Array.from({ length: 2 ** nullable.length },
    (_, mask) => new Set(nullable.filter((_, i) => (mask >> i) % 2 === 1)))
}

/** A value as SQL writes it from row `alias`: what `written` gives in JavaScript. */
function valueSql (value: Value, alias: string): string {
  if (value.of === 'id') return `${alias}.id::text`
  if (value.of === 'time') {
    return `to_json(to_char(timestamp '1970-01-01' + ${alias}.${value.column} * interval '1 millisecond', ` +
      '\'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"\'))::text'
  }
  return value.kind === 'text' ? `to_json(${alias}.${value.name})::text` : `${alias}.${value.name}::text`
}

const concatSql = (parts: readonly Part[], alias: string): string =>
  parts.map((part) => 'text' in part ? pg.escapeLiteral(part.text) : valueSql(part.value, alias)).join(' || ')

/** Row `alias`'s event data (the resource's JSON of it), or undefined when SQL cannot make it (see above). */
export function rowJsonSql (resource: ResourceDefinition, alias: string): string | undefined {
  const nullable = declaredColumns(resource).filter((name) => columnOf(resource.storage, name).nullable)
  if (nullable.length > MAX_NULLABLE) return undefined
  const branches: string[] = []
  for (const nulls of nullSets(nullable)) {
    const parts = shape(resource, nulls)
    if (parts === undefined) return undefined
    const render = (row: Row): string =>
      parts.map((part) => 'text' in part ? part.text : written(part.value, row)).join('')
    const differs = (row: Row): boolean => render(row) !== resource.json(resource.storage.item(row))
    if (samples(resource, nulls).some(differs)) return undefined
    const condition = nullable.map((name) => `${alias}.${name} IS ${nulls.has(name) ? '' : 'NOT '}NULL`).join(' AND ')
    branches.push(nullable.length === 0 ? concatSql(parts, alias) : `WHEN ${condition} THEN ${concatSql(parts, alias)}`)
  }
  return nullable.length === 0 ? branches[0] : `CASE ${branches.join(' ')} END`
}
