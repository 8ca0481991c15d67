import { StoreOpenError } from '../lib/errors.js'
import type { ColumnKind, ResourceStorage } from '../resources/definition.js'
import { declaredColumns } from './row-values.js'

/** A column as the database describes it: its type in the store's own words. */
export interface FoundColumn {
  readonly type: string
  readonly nullable: boolean
  /** It has a default, so an insert that leaves it out still succeeds. */
  readonly defaulted: boolean
}

const nullability = (nullable: boolean): string => nullable ? 'nullable' : 'NOT NULL'

/**
 * The declared columns a resource's table lacks and that an expand step may add (nullable ones; with
 * `apply` false, MIGRATE_ON_START=0, they are refused instead). Any other difference refuses the start,
 * naming the table and the column. A column the table has and the declaration lacks is left alone when
 * inserts can leave it out: a newer release's expand step adds such columns, and this one serves beside it.
 */
export function columnsToAdd (
  storage: ResourceStorage, found: ReadonlyMap<string, FoundColumn>, types: Readonly<Record<ColumnKind, string>>,
  apply: boolean
): string[] {
  const { table, columns } = storage
  const names = declaredColumns(storage)
  const missing: string[] = []
  const refuse = (column: string, problem: string): never => {
    throw new StoreOpenError(`the table ${table} does not match its declaration: the column ${column} ${problem}`)
  }
  for (const name of names) {
    const { kind, nullable } = columns[name] as ResourceStorage['columns'][string]
    const declared = `${types[kind]} ${nullability(nullable)}`
    const have = found.get(name)
    if (have === undefined) {
      if (!nullable) refuse(name, `is missing (declared ${declared}; only a nullable column is added at start)`)
      missing.push(name)
    } else if (have.type.toLowerCase() !== types[kind].toLowerCase() || have.nullable !== nullable) {
      refuse(name, `is ${have.type} ${nullability(have.nullable)}, declared ${declared}`)
    }
  }
  for (const [name, have] of found) {
    if (!['id', 'created_at', 'updated_at', ...names].includes(name) && !have.nullable && !have.defaulted) {
      refuse(name, 'is NOT NULL without a default and not declared: an insert would fail')
    }
  }
  if (!apply && missing.length > 0) {
    throw new StoreOpenError(`the table ${table} lacks the declared nullable column ${missing.join(', ')} and ` +
      'MIGRATE_ON_START=0: run `plant-store migrate` first (docs/upgrading.md)')
  }
  return missing
}
