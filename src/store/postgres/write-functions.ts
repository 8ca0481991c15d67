import pg from 'pg'
import { sha256 } from '../../lib/digest.js'
import type { ResourceDefinition, StoredResource } from '../../resources/definition.js'
import { tablePrefix } from './connection.js'
import { rowJsonSql } from './row-json.js'
import { checkedNames, sqlTypeOf } from './table-sql.js'
import { WEBHOOK_CHANNEL } from './webhook-sql.js'

// A batch's writes in one call of a function: planned once a session, yet safe behind a transaction pooler.
// Named by a digest of its definition, so two releases on one schema never fight over one function body.

export interface WriteFunction {
  /** Schema-qualified (tablePrefix), as callers name the tables. */
  name: string
  types: readonly string[]
  ddl: string
}

interface WriteFunctions {
  /** Values, now, message ids, type, before, request ids, traceparents, afters, notify, subject type. */
  create: WriteFunction
  /** Ids, message ids, type, payload before the data, now, request ids, traceparents, notify, subject type. */
  delete: WriteFunction | undefined
  /** Values, the row as read (id, times, values), updated_at, then the event's; no row if not as read. */
  update: WriteFunction
  /** The delete of a row as it was read: as `update` without the new values and updated_at. */
  deleteRead: WriteFunction
}

/** The positions of the event's arguments (those of each write `[ps_k]`-indexed). */
type EventArguments = Record<'message' | 'type' | 'subject' | 'now' | 'request' | 'trace' | 'notify', number>

/** Each `write` and its event, if subscribed; `ps_` variables, as with use_column a column would hide them. */
function batchBody (
  schema: string | undefined, count: number, write: string, a: EventArguments, subjectId: string, payload: string
): string {
  const t = tablePrefix(schema)
  return `DECLARE
  ps_k integer;
  ps_receivers integer;
  ps_wrote boolean := false;
BEGIN
  SELECT count(*)::integer INTO ps_receivers FROM ${t}webhook_subscriptions s
    WHERE NOT s.disabled AND $${a.type} = ANY (s.events);
  FOR ps_k IN 1 .. cardinality($${count}) LOOP
    ${write}
    CONTINUE WHEN NOT FOUND;
    ordinal := ps_k;
    deliveries := ps_receivers;
    ps_wrote := true;
    IF ps_receivers > 0 THEN
      INSERT INTO ${t}webhook_events
        (message_id, event_type, subject_type, subject_id, payload, created_at, request_id, traceparent)
      VALUES ($${a.message}[ps_k], $${a.type}, $${a.subject}, ${subjectId}, ${payload}, $${a.now},
        $${a.request}[ps_k], $${a.trace}[ps_k]);
    END IF;
    RETURN NEXT;
  END LOOP;
  IF ps_wrote AND ps_receivers > 0 AND $${a.notify} THEN
    PERFORM pg_notify('${WEBHOOK_CHANNEL}', ${schema === undefined ? 'current_schema()' : `'${schema}'`});
  END IF;
END`
}

/** A function named for its definition: `ps_<op>_<table>_<digest>`, its body under that name as its label. */
function defined (
  schema: string | undefined, op: string, resource: StoredResource, types: readonly string[],
  body: (label: string) => string
): WriteFunction {
  const names = checkedNames(resource)
  const returns = 'TABLE (ordinal integer, id bigint, ' +
    `${names.map((name) => `${name} ${sqlTypeOf(resource, name)}, `).join('')}` +
    'created_at bigint, updated_at bigint, deliveries integer)'
  // The digest covers everything but the name, so the label in the body is a placeholder.
  const definition = (label: string): string => `(${types.join(', ')}) RETURNS ${returns}
LANGUAGE plpgsql AS $plant_store$
#variable_conflict use_column
${body(label)}
$plant_store$`
  const label = `ps_${op}_${resource.collection.slice(0, 24)}_${sha256(definition('_'), 'hex').slice(0, 16)}`
  const name = `${tablePrefix(schema)}${label}`
  return { name, types, ddl: `CREATE FUNCTION ${name} ${definition(label)}` }
}

export function writeFunctions (resource: ResourceDefinition, schema: string | undefined): WriteFunctions {
  const names = checkedNames(resource)
  const n = names.length
  const t = tablePrefix(schema)
  const table = `${t}${resource.collection}`
  const columns = ['id', ...names, 'created_at', 'updated_at']
  const returning = `RETURNING ${columns.map((column) => `w.${column}`).join(', ')} INTO ${columns.join(', ')};`
  const own = names.map((name) => `${sqlTypeOf(resource, name)}[]`)
  const e = n + 2
  const create = defined(schema, 'create', resource,
    [...own, 'bigint', 'text[]', 'text', 'text', 'text[]', 'text[]', 'text[]', 'boolean', 'text'], (label) =>
      batchBody(schema, e, `-- nextval fails (2200H) past MAXVALUE 2^53 - 1 instead of going on. No row: the id was
    -- taken (the caller draws the sequence past the run of taken ids and writes it again).
    INSERT INTO ${table} AS w (${columns.join(', ')})
      SELECT nx.id, ${names.map((_, i) => `$${i + 1}[ps_k]`).join(', ')}, $${n + 1}, $${n + 1}
      FROM (SELECT nextval('${table}_id_seq') AS id) AS nx
      WHERE NOT EXISTS (SELECT 1 FROM ${t}chosen_ids c WHERE c.resource = '${resource.collection}' AND c.id = nx.id)
      ON CONFLICT (id) DO NOTHING
      ${returning}`,
      { message: e, type: e + 1, now: n + 1, request: e + 3, trace: e + 4, notify: e + 6, subject: e + 7 },
      `${label}.id`, `$${e + 2} || ${label}.id::text || $${e + 5}[ps_k]`))
  const remove = rowJsonSql(resource, 'row') === undefined
    ? undefined
    : defined(schema, 'delete', resource,
      ['bigint[]', 'text[]', 'text', 'text', 'bigint', 'text[]', 'text[]', 'boolean', 'text'],
      (label) => batchBody(schema, 1, `DELETE FROM ${table} AS w WHERE w.id = $1[ps_k]
      ${returning}`, { message: 2, type: 3, now: 5, request: 6, trace: 7, notify: 8, subject: 9 }, `${label}.id`,
      `$4 || ${rowJsonSql(resource, label) as string} || '}'`))
  // A row as it was read: its id, times and every value (a row deleted and made again with that id is another).
  const asRead = (first: number): string => `w.id = $${first}[ps_k] AND w.created_at = $${first + 1}[ps_k]
        AND w.updated_at = $${first + 2}[ps_k]
        AND ROW(${names.map((name) => `w.${name}`).join(', ')}) IS NOT DISTINCT FROM
          ROW(${names.map((_, i) => `$${first + 3 + i}[ps_k]`).join(', ')})`
  const readTypes = ['bigint[]', 'bigint[]', 'bigint[]', ...own]
  const eventTypes = ['text[]', 'text', 'text[]', 'bigint', 'text[]', 'text[]', 'boolean', 'text']
  const events = (m: number): EventArguments =>
    ({ message: m, type: m + 1, now: m + 3, request: m + 4, trace: m + 5, notify: m + 6, subject: m + 7 })
  const u = 2 * n + 5
  const update = defined(schema, 'update', resource, [...own, ...readTypes, 'bigint[]', ...eventTypes], (label) =>
    batchBody(schema, n + 1, `UPDATE ${table} AS w
      SET ${names.map((name, i) => `${name} = $${i + 1}[ps_k], `).join('')}updated_at = $${2 * n + 4}[ps_k]
      WHERE ${asRead(n + 1)}
      ${returning}`, events(u), `${label}.id`, `$${u + 2}[ps_k]`))
  const d = n + 4
  const deleteRead = defined(schema, 'delete_read', resource, [...readTypes, ...eventTypes], (label) =>
    batchBody(schema, 1, `DELETE FROM ${table} AS w WHERE ${asRead(1)}
      ${returning}`, events(d), `${label}.id`, `$${d + 2}[ps_k]`))
  return { create, delete: remove, update, deleteRead }
}

/** A value as a literal of `type` in a call's text (the call goes with its bounds in one simple-protocol message). */
export function sqlLiteral (value: unknown, type: string): string {
  if (Array.isArray(value) && type.endsWith('[]')) {
    const element = type.slice(0, -2)
    return `ARRAY[${value.map((one) => sqlLiteral(one, element)).join(', ')}]::${type}`
  }
  if (value === null || value === undefined) return `NULL::${type}`
  if (typeof value === 'boolean') return `${String(value)}::${type}`
  // Quoted: a cast binds tighter than a minus, and -9223372036854775808 is no bigint before it is negated.
  if (typeof value === 'bigint' || typeof value === 'number') return `'${String(value)}'::${type}`
  if (typeof value !== 'string') throw new TypeError(`no SQL literal for a ${typeof value}`)
  // The simple protocol's text ends at a NUL; text cannot hold one anyway.
  if (value.includes('\0')) throw new RangeError('a NUL in a text value')
  return `${pg.escapeLiteral(value)}::${type}`
}

/** The call of `fn` with `values`: its rows are the written rows, each with its `ordinal` and `deliveries`. */
export const callSql = (fn: WriteFunction, values: readonly unknown[]): string =>
  `SELECT * FROM ${fn.name}(${values.map((value, i) => sqlLiteral(value, fn.types[i] as string)).join(', ')})`

export const allWriteFunctions = (
  resources: readonly ResourceDefinition[], schema: string | undefined
): WriteFunction[] =>
  resources.flatMap((resource) => {
    const { create, delete: remove, update, deleteRead } = writeFunctions(resource, schema)
    return [create, ...remove === undefined ? [] : [remove], update, deleteRead]
  })

export async function missingWriteFunctions (
  client: pg.ClientBase, resources: readonly ResourceDefinition[], schema: string | undefined
): Promise<WriteFunction[]> {
  const functions = allWriteFunctions(resources, schema)
  const { rows } = await client.query<{ name: string }>(
    'SELECT name FROM unnest($1::text[]) AS name WHERE to_regproc(name) IS NULL', [functions.map(({ name }) => name)])
  const missing = new Set(rows.map(({ name }) => name))
  return functions.filter(({ name }) => missing.has(name))
}

/** In the migrating transaction (under the migration lock). */
export async function ensureWriteFunctions (
  client: pg.ClientBase, resources: readonly ResourceDefinition[], schema: string | undefined
): Promise<void> {
  for (const fn of await missingWriteFunctions(client, resources, schema)) await client.query(fn.ddl)
}
