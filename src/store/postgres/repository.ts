import type pg from 'pg'
import { idsExhausted, idTaken, notFound } from '../../lib/errors.js'
import type {
  ColumnsDeclaration, ColumnValues, CreateResult, Repository, ResourceDefinition, ResourceSchemas, ResourceTypes,
  StoredRow
} from '../../resources/definition.js'
import { eventPayloadHead, eventType, newMessageId, resourceEvent } from '../../webhooks/events.js'
import { createOnce, drawFreeId, writableRow } from '../rules.js'
import { boundedQuery, inTransaction, statementRunner, type RunStatement } from './connection.js'
import type { PostgresRepositoryContext } from './context.js'
import { tableStatements, type TableStatements } from './table-sql.js'
import { postgresEventMessageValues, postgresEventValues } from './webhook-sql.js'
import { callSql, writeFunctions, type WriteFunctions } from './write-functions.js'
import type { EventOrigin } from '../../webhooks/origin.js'
import type { IdempotencyKey } from '../../resources/idempotency.js'
import type { IfMatch } from '../../resources/definition.js'

type Queryable = pg.Pool | pg.PoolClient

/** A resource as its PostgreSQL repository serves it. */
export type PostgresResource<R extends ResourceTypes, C extends ColumnsDeclaration> =
  ResourceDefinition<string, string, R, ResourceSchemas, C>

/** A row as the driver reads it: int8 as bigint, float8 as number. */
type Row = Record<string, unknown> & { id: bigint, created_at: bigint, updated_at: bigint }

type Written = Row & { deliveries: number }

type Keyed = Row & { fingerprint: string }

const SEQUENCE_LIMIT_EXCEEDED = '2200H'

/** What a create's one-statement event needs: the item's JSON after its id, when the JSON begins with it. */
function jsonAfterId (json: string, id: bigint): string | undefined {
  const head = `{"id":${id}`
  const next = json[head.length]
  return json.startsWith(head) && (next === ',' || next === '}') ? json.slice(head.length) : undefined
}

/** One resource's table as its repository's steps use it. */
interface Table<R extends ResourceTypes, C extends ColumnsDeclaration> {
  resource: PostgresResource<R, C>
  context: PostgresRepositoryContext
  sql: TableStatements
  run: RunStatement<Exclude<keyof TableStatements, 'list'>>
  functions: WriteFunctions
  stored: (row: Row) => StoredRow<ColumnValues<C>>
  toItem: (row: Row) => R['item']
  /** A row's own values in declaration order: the statements' first parameters. */
  ordered: (values: ColumnValues<C>) => unknown[]
}

function table<R extends ResourceTypes, C extends ColumnsDeclaration> (
  resource: PostgresResource<R, C>, context: PostgresRepositoryContext
): Table<R, C> {
  const names = Object.keys(resource.storage.columns) as Array<keyof C & string>
  const { list, ...fixed } = tableStatements(resource, context.schema)
  const stored = (row: Row): StoredRow<ColumnValues<C>> => {
    const values: Record<string, unknown> = {}
    for (const name of names) values[name] = row[name]
    // The database enforced the declared kinds and nullability when the row was written.
    const own = values as ColumnValues<C>
    return { id: row.id, values: own, createdAt: Number(row.created_at), updatedAt: Number(row.updated_at) }
  }
  return {
    resource,
    context,
    sql: { list, ...fixed },
    run: statementRunner(fixed),
    functions: writeFunctions(resource, context.schema),
    stored,
    toItem: (row) => resource.storage.item(stored(row)),
    ordered: (values) => names.map((name) => values[name])
  }
}

/** A server-assigned id, drawn past the taken ones; past 2^53 - 1 `ids-exhausted`. */
async function withGeneratedId<T> (
  { run, resource }: Pick<Table<ResourceTypes, ColumnsDeclaration>, 'run'> & { resource: { title: string } },
  db: Queryable, attempt: () => Promise<T | undefined>
): Promise<T> {
  try {
    return await drawFreeId(attempt, async () => await run(db, 'skipTaken'))
  } catch (err) {
    if ((err as { code?: unknown }).code === SEQUENCE_LIMIT_EXCEEDED) throw idsExhausted(resource)
    throw err
  }
}

async function insertRow<R extends ResourceTypes, C extends ColumnsDeclaration> (
  t: Table<R, C>, db: Queryable, item: R['create'], now: number
): Promise<Row> {
  const values = t.ordered(t.resource.storage.create(item))
  if (item.id === undefined) {
    return await withGeneratedId(t, db, async () => (await t.run<Row>(db, 'insertGenerated', [...values, now])).rows[0])
  }
  const { rows: [row] } = await t.run<Row>(db, 'insertChosen', [...values, item.id, now])
  if (row === undefined) throw idTaken(t.resource, item.id)
  return row
}

/** A keyed or chosen-id create: a transaction, with the key's lock, the replay rule and the event. */
async function createInTransaction<R extends ResourceTypes, C extends ColumnsDeclaration> (
  t: Table<R, C>, item: R['create'], key: IdempotencyKey | undefined, origin: EventOrigin | undefined,
  admit: (() => void) | undefined
): Promise<CreateResult<R['item']>> {
  const { run, resource, context } = t
  const now = Date.now()
  let deliveries = 0
  const result = await inTransaction(context.pool, async (client) => await createOnce(key, now, {
    findKey: async ({ scope, key }, cutoff) => {
      await run(client, 'lockKey', [`${resource.collection}\n${scope}\n${key}`])
      return (await run<Keyed>(client, 'findKey', [scope, key, cutoff])).rows[0]
    },
    remembered: (earlier: Keyed) => t.toItem(earlier),
    expireKeys: async (cutoff) => await run(client, 'expireKeys', [cutoff]),
    insert: async () => await insertRow(t, client, item, now),
    saveKey: async ({ scope, key, fingerprint }, row) =>
      await run(client, 'saveKey', [scope, key, fingerprint, row.id]),
    created: async (row) => {
      const created = t.toItem(row)
      deliveries = await context.enqueue(client, resourceEvent(resource, 'created', created, now, origin), now,
        context.claimNotify(now))
      return created
    }
  }, admit))
  return context.afterCommit(result, deliveries)
}

/**
 * The usual create, without key or chosen id: the row and its event in one statement, one round
 * trip. The event's data is the item's JSON around the id the statement draws; undefined when
 * that JSON does not begin with the id (the caller then creates in a transaction).
 */
async function createGenerated<R extends ResourceTypes, C extends ColumnsDeclaration> (
  t: Table<R, C>, item: R['create'], origin: EventOrigin | undefined
): Promise<CreateResult<R['item']> | undefined> {
  const { resource: { storage }, context } = t
  const now = Date.now()
  const values = storage.create(item)
  const after = jsonAfterId(t.resource.json(storage.item({ id: 0n, values, createdAt: now, updatedAt: now })), 0n)
  if (after === undefined) return undefined
  const event = postgresEventValues(t.resource, 'created', after, now, origin, context.claimNotify(now))
  const call = callSql(t.functions.create, [...t.ordered(values), now, ...event])
  const row = await withGeneratedId(t, context.pool, async () => (await boundedQuery<Written>(context.pool, call))[0])
  return context.afterCommit({ item: t.toItem(row), replayed: false }, row.deliveries)
}

/**
 * A replace, update or delete: the row locked (its precondition checked), then the write and its
 * event in one statement, in one transaction. A write that changes nothing keeps the row (no event).
 */
async function writeRow<R extends ResourceTypes, C extends ColumnsDeclaration> (
  t: Table<R, C>, id: bigint, change: (current: StoredRow<ColumnValues<C>>) => ColumnValues<C> | 'delete',
  ifMatch: IfMatch | undefined, origin: EventOrigin | undefined
): Promise<R['item']> {
  const { resource, context, run } = t
  const now = Date.now()
  let deliveries = 0
  const item = await inTransaction(context.pool, async (client) => {
    const { rows: [locked] } = await run<Row>(client, 'lockRow', [id])
    const current = t.stored(writableRow(resource, id, locked, ifMatch, t.toItem))
    const next = change(current)
    if (next !== 'delete' && Object.keys(next).every((name) => next[name] === current.values[name])) {
      return resource.storage.item(current)
    }
    // updated_at strictly increases, so the ETag changes with every write.
    const written = next === 'delete'
      ? current
      : { ...current, values: next, updatedAt: Math.max(now, current.updatedAt + 1) }
    const result = resource.storage.item(written)
    const event = resourceEvent(resource, next === 'delete' ? 'deleted' : 'updated', result, now, origin)
    const eventValues = postgresEventMessageValues(event, now, context.claimNotify(now))
    const { rows: [row] } = next === 'delete'
      ? await run<Written>(client, 'delete', [id, ...eventValues])
      : await run<Written>(client, 'update', [...t.ordered(next), id, written.updatedAt, ...eventValues])
    deliveries = row?.deliveries ?? 0
    return result
  })
  return context.afterCommit(item, deliveries)
}

/**
 * A delete without If-Match: nothing to check before it, so the row and its event (the data made
 * from the deleted row by the function, see row-json.ts) go in one call, one round trip.
 */
async function deleteInOneCall<R extends ResourceTypes, C extends ColumnsDeclaration> (
  t: Table<R, C>, id: bigint, origin: EventOrigin | undefined
): Promise<R['item'] | undefined> {
  const { resource, context, functions } = t
  if (functions.delete === undefined) return undefined
  const now = Date.now()
  const type = eventType(resource, 'deleted')
  const [row] = await boundedQuery<Written>(context.pool, callSql(functions.delete, [
    id, newMessageId(), type, eventPayloadHead(type, now), now, origin?.requestId ?? null, origin?.traceparent ?? null,
    context.claimNotify(now), resource.name
  ]))
  if (row === undefined) throw notFound(resource, id)
  return context.afterCommit(t.toItem(row), row.deliveries)
}

/**
 * The one repository of every resource on PostgreSQL, built from its storage declaration: the
 * Repository contract (src/resource.ts), as the store conformance suite checks it.
 */
export function createPostgresRepository<R extends ResourceTypes, C extends ColumnsDeclaration> (
  resource: PostgresResource<R, C>, context: PostgresRepositoryContext
): Repository<R> {
  const t = table(resource, context)
  const { pool, guard } = context
  const { storage } = resource
  return {
    async list (query) {
      const filters = storage.filters.flatMap((filter) => {
        const value = filter.value(query)
        return value === undefined ? [] : [{ column: filter.column, value }]
      })
      const { rows } = await guard(async () => await pool.query<Row>(t.sql.list(filters.map(({ column }) => column)),
        [query.after ?? 0n, query.limit + 1, ...filters.map(({ value }) => value)]))
      return { items: rows.slice(0, query.limit).map(t.toItem), hasMore: rows.length > query.limit }
    },
    async get (id) {
      const { rows: [row] } = await guard(async () => await t.run<Row>(pool, 'get', [id]))
      return row === undefined ? undefined : t.toItem(row)
    },
    async create (item, key, origin, admit) {
      if (key !== undefined || item.id !== undefined) {
        return await guard(async () => await createInTransaction(t, item, key, origin, admit))
      }
      // Without a key nothing can be replayed: admit before the one-statement create.
      admit?.()
      return await guard(async () =>
        await createGenerated(t, item, origin) ?? await createInTransaction(t, item, key, origin, undefined))
    },
    replace: async (id, item, ifMatch, origin) =>
      await guard(async () => await writeRow(t, id, () => storage.replace(item), ifMatch, origin)),
    update: async (id, changes, ifMatch, origin) =>
      await guard(async () =>
        await writeRow(t, id, (current) => storage.update(current.values, changes), ifMatch, origin)),
    delete: async (id, ifMatch, origin) =>
      await guard(async () => (ifMatch === undefined ? await deleteInOneCall(t, id, origin) : undefined) ??
        await writeRow(t, id, () => 'delete', ifMatch, origin))
  }
}
