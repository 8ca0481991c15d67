import pg from 'pg'
import { sha256 } from '../../lib/digest.js'
import type { ColumnKind, ResourceDefinition } from '../../resources/definition.js'
import { tablePrefix } from './connection.js'
import { rowJsonSql } from './row-json.js'
import { checkedNames, SQL_TYPES, type StoredResource } from './table-sql.js'
import { WEBHOOK_CHANNEL } from './webhook-sql.js'

/**
 * The usual create and the delete without If-Match as server-side functions, each a write and its
 * event in one call. PostgreSQL keeps a function's plans for the session, where an unnamed statement
 * is parsed and planned on every call, and unlike a named prepared statement a function is safe
 * behind a transaction pooler (PgBouncer's pool_mode = transaction hands a session to another client
 * after each transaction). Each is made at start, under the migration lock, when missing, and never
 * changed: its name ends in a digest of its definition, so a release whose statements differ adds
 * functions of its own beside the previous release's (a rolling upgrade runs both on one schema) and
 * two releases never fight over one function body.
 */

export interface WriteFunction {
  /** Schema-qualified (tablePrefix): callers name it so, as they name the tables. */
  name: string
  /** Each argument's SQL type, in order. */
  types: readonly string[]
  ddl: string
}

export interface WriteFunctions {
  /** A server-assigned id, no key: values, now, then the event's (see `postgresEventValues`). */
  create: WriteFunction
  /**
   * The id, then the event's: message id, type, the body before its data, now, request id, traceparent,
   * notify, subject type.
   */
  delete: WriteFunction | undefined
}

/** The event's arguments, after the write's own: their positions in the function's arguments. */
interface EventArguments {
  message: number
  type: number
  subject: number
  now: number
  request: number
  trace: number
  notify: number
}

/** The outbox write: the event's row only when some enabled subscription asked for its type (as writeWithEventSql). */
function eventBlock (schema: string | undefined, a: EventArguments, subjectId: string, payload: string): string {
  const t = tablePrefix(schema)
  return `SELECT count(*)::integer INTO deliveries FROM ${t}webhook_subscriptions s
    WHERE NOT s.disabled AND $${a.type} = ANY (s.events);
  IF deliveries > 0 THEN
    INSERT INTO ${t}webhook_events
      (message_id, event_type, subject_type, subject_id, payload, created_at, request_id, traceparent)
    VALUES ($${a.message}, $${a.type}, $${a.subject}, ${subjectId}, ${payload}, $${a.now}, $${a.request}, $${a.trace});
    IF $${a.notify} THEN
      PERFORM pg_notify('${WEBHOOK_CHANNEL}', ${schema === undefined ? 'current_schema()' : `'${schema}'`});
    END IF;
  END IF;`
}

/** A function named for its definition: `ps_<op>_<table>_<digest>`, its body under that name as its label. */
function defined (
  schema: string | undefined, op: string, resource: StoredResource, types: readonly string[],
  body: (label: string) => string
): WriteFunction {
  const names = checkedNames(resource)
  const sqlType = (name: string): string =>
    SQL_TYPES[(resource.storage.columns[name] as { kind: ColumnKind }).kind]
  const returns = `TABLE (id bigint, ${names.map((name) => `${name} ${sqlType(name)}, `).join('')}` +
    'created_at bigint, updated_at bigint, deliveries integer)'
  // The digest covers everything but the name, so the label in the body is a placeholder.
  const definition = (label: string): string => `(${types.join(', ')}) RETURNS ${returns}
LANGUAGE plpgsql AS $plant_store$
#variable_conflict use_column
BEGIN
  ${body(label)}
  RETURN NEXT;
END
$plant_store$`
  const label = `ps_${op}_${resource.storage.table.slice(0, 24)}_${sha256(definition('_'), 'hex').slice(0, 16)}`
  const name = `${tablePrefix(schema)}${label}`
  return { name, types, ddl: `CREATE FUNCTION ${name} ${definition(label)}` }
}

export function writeFunctions (resource: ResourceDefinition, schema: string | undefined): WriteFunctions {
  const names = checkedNames(resource)
  const n = names.length
  const t = tablePrefix(schema)
  const table = `${t}${resource.storage.table}`
  const columns = ['id', ...names, 'created_at', 'updated_at']
  const returning = `RETURNING ${columns.map((column) => `w.${column}`).join(', ')} INTO ${columns.join(', ')};`
  const own = names.map((name) => SQL_TYPES[(resource.storage.columns[name] as { kind: ColumnKind }).kind])
  // After the values and now, postgresEventValues': message id, type, before, now, request id, traceparent, after,
  // notify, subject type.
  const e = n + 2
  const create = defined(schema, 'create', resource,
    [...own, 'bigint', 'text', 'text', 'text', 'bigint', 'text', 'text', 'text', 'boolean', 'text'], (label) => `
  -- nextval fails (2200H) past MAXVALUE 2^53 - 1 instead of going on. No row: the id was taken (the caller
  -- draws the sequence past the run of taken ids and calls again).
  INSERT INTO ${table} AS w (${columns.join(', ')})
    SELECT nx.id, ${names.map((_, i) => `$${i + 1}`).join(', ')}, $${n + 1}, $${n + 1}
    FROM (SELECT nextval('${table}_id_seq') AS id) AS nx
    WHERE NOT EXISTS (SELECT 1 FROM ${t}chosen_ids c WHERE c.resource = '${resource.collection}' AND c.id = nx.id)
    ON CONFLICT (id) DO NOTHING
    ${returning}
  IF NOT FOUND THEN RETURN; END IF;
  ${eventBlock(schema,
    { message: e, type: e + 1, now: e + 3, request: e + 4, trace: e + 5, notify: e + 7, subject: e + 8 },
    `${label}.id`, `$${e + 2} || ${label}.id::text || $${e + 6}`)}`)
  const remove = rowJsonSql(resource, 'row') === undefined
    ? undefined
    : defined(schema, 'delete', resource,
      ['bigint', 'text', 'text', 'text', 'bigint', 'text', 'text', 'boolean', 'text'],
      (label) => `DELETE FROM ${table} AS w WHERE w.id = $1
    ${returning}
  IF NOT FOUND THEN RETURN; END IF;
  ${eventBlock(schema, { message: 2, type: 3, now: 5, request: 6, trace: 7, notify: 8, subject: 9 }, `${label}.id`,
    `$4 || ${rowJsonSql(resource, label) as string} || '}'`)}`)
  return { create, delete: remove }
}

/** A value as a literal of `type` in a call's text (the call goes with its bounds in one simple-protocol message). */
export function sqlLiteral (value: unknown, type: string): string {
  if (value === null || value === undefined) return `NULL::${type}`
  if (typeof value === 'boolean') return `${String(value)}::${type}`
  // Quoted: a cast binds tighter than a minus, and -9223372036854775808 is no bigint before it is negated.
  if (typeof value === 'bigint' || typeof value === 'number') return `'${String(value)}'::${type}`
  if (typeof value !== 'string') throw new TypeError(`no SQL literal for a ${typeof value}`)
  // The simple protocol's text ends at a NUL; text cannot hold one anyway.
  if (value.includes('\0')) throw new RangeError('a NUL in a text value')
  return `${pg.escapeLiteral(value)}::${type}`
}

/** The call of `fn` with `values`: its rows are the written row, with `deliveries`, or none. */
export const callSql = (fn: WriteFunction, values: readonly unknown[]): string =>
  `SELECT * FROM ${fn.name}(${values.map((value, i) => sqlLiteral(value, fn.types[i] as string)).join(', ')})`

/** Every write function of `resources` on `schema`. */
export const allWriteFunctions = (
  resources: readonly ResourceDefinition[], schema: string | undefined
): WriteFunction[] =>
  resources.flatMap((resource) => {
    const { create, delete: remove } = writeFunctions(resource, schema)
    return remove === undefined ? [create] : [create, remove]
  })

/** The functions of `resources` that `schema` lacks: this release's, named by their definition (see above). */
export async function missingWriteFunctions (
  client: pg.ClientBase, resources: readonly ResourceDefinition[], schema: string | undefined
): Promise<WriteFunction[]> {
  const functions = allWriteFunctions(resources, schema)
  const { rows } = await client.query<{ name: string }>(
    'SELECT name FROM unnest($1::text[]) AS name WHERE to_regproc(name) IS NULL', [functions.map(({ name }) => name)])
  const missing = new Set(rows.map(({ name }) => name))
  return functions.filter(({ name }) => missing.has(name))
}

/** Makes the functions that are missing, in the migrating transaction (under the migration lock). */
export async function ensureWriteFunctions (
  client: pg.ClientBase, resources: readonly ResourceDefinition[], schema: string | undefined
): Promise<void> {
  for (const fn of await missingWriteFunctions(client, resources, schema)) await client.query(fn.ddl)
}
