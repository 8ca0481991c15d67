import type pg from 'pg'
import type { ColumnKind, StoredResource } from '../../resources/definition.js'
import { columnOf, declaredColumns } from '../row-values.js'
import { columnSql, filterIndexSql, reconcileTable, type FoundColumn, type TableDialect } from '../table-drift.js'
import { MAX_ASSIGNED_ID } from '../contract.js'
import { tablePrefix } from './connection.js'
import { writeWithEventSql } from './webhook-sql.js'

const SQL_TYPES: Readonly<Record<ColumnKind, string>> = {
  text: 'text', integer: 'bigint', real: 'double precision'
}

/** A declared column's PostgreSQL type. */
export const sqlTypeOf = ({ storage }: StoredResource, name: string): string => SQL_TYPES[columnOf(storage, name).kind]

const dialect = (schema: string | undefined): TableDialect =>
  ({ types: SQL_TYPES, prefix: tablePrefix(schema), ifNotExists: 'IF NOT EXISTS ' })

/** The declared columns (declaredColumns checks them and the collection, a literal in statements). */
export function checkedNames (resource: StoredResource): readonly string[] {
  const names = declaredColumns(resource)
  const { collection } = resource
  // n, deliveries and notified are the write-with-event statements' own.
  for (const reserved of ['n', 'deliveries', 'notified']) {
    if (names.includes(reserved)) throw new Error(`${collection}.${reserved}: PostgreSQL's statements use that name`)
  }
  return names
}

/** The last id the sequence handed out (none yet: one below its start). */
const drawn = (sequence: string): string =>
  `(SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM ${sequence})`

/** A resource repository's statements; a row's own values are $1..$n in declaration order, other parameters follow. */
export function tableStatements (resource: StoredResource, schema: string | undefined) {
  const names = checkedNames(resource)
  const n = names.length
  const t = tablePrefix(schema)
  const table = `${t}${resource.collection}`
  const sequence = `${t}${resource.collection}_id_seq`
  const chosen = `${t}chosen_ids`
  const keys = `${t}idempotency_keys`
  const owner = `'${resource.collection}'`
  const columns = ['id', ...names, 'created_at', 'updated_at'].join(', ')
  const sqlType = (name: string): string => sqlTypeOf(resource, name)
  const typed = (i: number): string => `$${i + 1}::${sqlType(names[i] as string)}`
  // int64s as decimal strings: a JSON number would round them (see the keys' migration).
  const asJson = (name: string): string => `r.${name}${sqlType(name) === 'bigint' ? '::text' : ''}`
  const values = names.map((_, i) => typed(i)).join(', ')
  // nextval fails (2200H) past MAXVALUE 2^53 - 1 instead of going on.
  const insertGenerated = `INSERT INTO ${table} (${columns})
    SELECT next.id, ${values}, $${n + 1}, $${n + 1} FROM (SELECT nextval('${sequence}') AS id) AS next
    WHERE NOT EXISTS (SELECT 1 FROM ${chosen} c WHERE c.resource = ${owner} AND c.id = next.id)
    ON CONFLICT (id) DO NOTHING RETURNING ${columns}`
  return {
    get: `SELECT ${columns} FROM ${table} WHERE id = $1`,
    /** Concurrent reads' ids, $1 an array (repeats and missing ids allowed). */
    getMany: `SELECT ${columns} FROM ${table} WHERE id = ANY($1::bigint[])`,
    lockRow: `SELECT ${columns} FROM ${table} WHERE id = $1 FOR UPDATE`,
    /** Keyset pagination (a deep page costs what the first one does), $1 after, $2 limit, then the filters' values. */
    list: (filters: readonly string[]): string =>
      `SELECT ${columns} FROM ${table} WHERE id > $1${filters.map((column, i) => ` AND ${column} = $${i + 3}`).join('')}
       ORDER BY id LIMIT $2`,
    insertGenerated,
    // A chosen id the sequence has yet to reach is remembered, so the sequence skips it even after it is deleted.
    insertChosen: `WITH written AS (
        INSERT INTO ${table} (${columns}) VALUES ($${n + 1}, ${values}, $${n + 2}, $${n + 2})
        ON CONFLICT (id) DO NOTHING RETURNING ${columns}),
      noted AS (
        INSERT INTO ${chosen} (resource, id) SELECT ${owner}, written.id FROM written
        WHERE written.id > ${drawn(sequence)} AND written.id <= ${MAX_ASSIGNED_ID}
        ON CONFLICT (resource, id) DO NOTHING)
      SELECT ${columns} FROM written`,
    // nextval past the run of taken ids: setval could move the sequence back under a concurrent draw, reusing an id.
    skipTaken: `WITH RECURSIVE walk (id) AS (
        SELECT ${drawn(sequence)} + 1
        UNION ALL
        SELECT walk.id + 1 FROM walk
        WHERE walk.id <= ${MAX_ASSIGNED_ID}
          AND (EXISTS (SELECT 1 FROM ${table} r WHERE r.id = walk.id)
               OR EXISTS (SELECT 1 FROM ${chosen} c WHERE c.resource = ${owner} AND c.id = walk.id))),
      free AS (SELECT max(id) AS id FROM walk),
      drawn AS (
        SELECT count(nextval('${sequence}')) AS n
        FROM free, generate_series(1, free.id - 1 - ${drawn(sequence)})),
      forgotten AS (DELETE FROM ${chosen} c USING free WHERE c.resource = ${owner} AND c.id < free.id)
      SELECT n FROM drawn`,
    /** Every value and updated_at ($n + 2) of row $n + 1, with its event: the caller has locked the row. */
    update: writeWithEventSql(schema,
      `UPDATE ${table} SET ${names.map((name, i) => `${name} = ${typed(i)}`).join(', ')}, updated_at = $${n + 2}
       WHERE id = $${n + 1} RETURNING ${columns}`, columns, n + 3),
    /** Row $1 and its event. */
    delete: writeWithEventSql(schema, `DELETE FROM ${table} WHERE id = $1 RETURNING ${columns}`, columns, 2),
    // Same-key creates queue behind each other, so exactly one of them creates.
    lockKey: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))',
    // The row as first answered: its values are read back as the table's columns are.
    findKey: `SELECT fingerprint, id, created_at, updated_at,
        ${names.map((name) => `(row_values::json ->> '${name}')::${sqlType(name)} AS ${name}`).join(', ')}
      FROM ${keys} WHERE resource = ${owner} AND scope = $1 AND key = $2 AND created_at > $3`,
    /** Key $1 $2 with fingerprint $3 remembers row $4, just written in this transaction (int64s as decimal strings). */
    saveKey: `INSERT INTO ${keys} (resource, scope, key, fingerprint, id, row_values, created_at, updated_at)
      SELECT ${owner}, $1, $2, $3, r.id,
             json_build_object(${names.map((name) => `'${name}', ${asJson(name)}`).join(', ')})::text,
             r.created_at, r.updated_at
      FROM ${table} r WHERE r.id = $4
      ON CONFLICT (resource, scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, id = excluded.id,
        row_values = excluded.row_values, created_at = excluded.created_at, updated_at = excluded.updated_at`,
    // Every resource's: rows another instance is deleting are skipped, never waited for.
    expireKeys: `DELETE FROM ${keys} WHERE (resource, scope, key) IN (
      SELECT resource, scope, key FROM ${keys} WHERE created_at <= $1 LIMIT 100 FOR UPDATE SKIP LOCKED)`
  } as const
}

/** A resource's table: ids within 1..2^53 - 1 from an identity sequence that never hands one out twice. */
export function createTableSql (resource: StoredResource, schema: string | undefined): string {
  const { collection, storage } = resource
  const postgres = dialect(schema)
  const declared = checkedNames(resource).map((name) => `${columnSql(storage, name, postgres)}, `)
  return [
    `CREATE TABLE IF NOT EXISTS ${postgres.prefix}${collection} (
       id bigint GENERATED BY DEFAULT AS IDENTITY (MINVALUE 1 MAXVALUE ${MAX_ASSIGNED_ID}) PRIMARY KEY,
       ${declared.join('')}created_at bigint NOT NULL, updated_at bigint NOT NULL)`,
    ...storage.filters.map(({ column }) => filterIndexSql(collection, column, postgres))
  ].join(';\n')
}

/** The trim of a resource's chosen ids: past `$1` of them, the sequence moves past the oldest (never back). */
export function chosenTrimSql (resource: StoredResource, schema: string | undefined): { pass: string, forget: string } {
  checkedNames(resource)
  const t = tablePrefix(schema)
  const sequence = `${t}${resource.collection}_id_seq`
  const owner = `'${resource.collection}'`
  return {
    // Moved forward only: a chosen id it passes is never handed out, so a deleted one never comes back.
    pass: `SELECT setval('${sequence}', passed.id)
           FROM (SELECT id FROM ${t}chosen_ids WHERE resource = ${owner} ORDER BY id DESC OFFSET $1 LIMIT 1) AS passed
           WHERE passed.id > ${drawn(sequence)}`,
    forget: `DELETE FROM ${t}chosen_ids WHERE resource = ${owner} AND id <= ${drawn(sequence)}`
  }
}

export async function tableExists (client: pg.ClientBase, name: string): Promise<boolean> {
  const { rows: [found] } = await client.query<{ name: string | null }>('SELECT to_regclass($1)::text AS name', [name])
  return found !== undefined && found.name !== null
}

/** Makes the missing tables, or throws what `refuse` makes; an existing one is not even locked by IF NOT EXISTS. */
export async function ensureResourceTables (
  client: pg.ClientBase, resources: readonly StoredResource[], schema: string | undefined,
  refuse?: (what: string) => Error
): Promise<void> {
  for (const resource of resources) {
    if (await tableExists(client, `${tablePrefix(schema)}${resource.collection}`)) continue
    if (refuse !== undefined) throw refuse(`the table ${resource.collection}`)
    await client.query(createTableSql(resource, schema))
  }
}

/** Reconciles each existing table with its declaration (table-drift.ts); returns the columns added. */
export async function reconcileResourceTables (
  client: pg.ClientBase, resources: readonly StoredResource[], schema: string | undefined, apply: boolean
): Promise<string[]> {
  const added: string[] = []
  const postgres = dialect(schema)
  for (const resource of resources) {
    const { rows } = await client.query<FoundColumn & { name: string }>(
      `SELECT attname AS name, format_type(atttypid, atttypmod) AS type, NOT attnotnull AS nullable,
              atthasdef OR attidentity <> '' AS defaulted
       FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`,
      [`${postgres.prefix}${resource.collection}`])
    if (rows.length === 0) continue
    const found = reconcileTable(resource, new Map(rows.map((row) => [row.name, row])), postgres, apply)
    for (const sql of found.statements) await client.query(sql)
    added.push(...found.added)
  }
  return added
}
