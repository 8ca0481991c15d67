import type pg from 'pg'
import { idsExhausted, idTaken, notFound } from '../../lib/errors.js'
import type {
  ColumnValues, CreateResult, IfMatch, Repository, ResourceDefinition, ResourceTypes, StoredRow
} from '../../resources/definition.js'
import {
  buildEventMessage, eventPayloadAroundId, eventPayloadHead, eventType, newMessageId, resourceEvent
} from '../../webhooks/events.js'
import { createOnce, drawFreeId, writableRow } from '../rules.js'
import { filtersOf, sameValues, valuesInOrder } from '../row-values.js'
import { boundedQuery, inTransaction, statementRunner } from './connection.js'
import { tableStatements } from './table-sql.js'
import { postgresEventMessageValues } from './webhook-sql.js'
import type { EnqueueEvent } from './webhook-store.js'
import { callSql, writeFunctions, type WriteFunction } from './write-functions.js'
import { callBatch, type CallBatch } from './call-batch.js'
import type { EventOrigin } from '../../webhooks/origin.js'
import type { IdempotencyKey } from '../../resources/idempotency.js'

/** What a repository is given by the store that opened the database. */
export interface PostgresRepositoryContext {
  pool: pg.Pool
  /** DATABASE_URL's schema: statements name their tables in it. */
  schema: string | undefined
  enqueue: EnqueueEvent
  /** PG_CONNECT_TIMEOUT_MS: a request's wait for a connection, its wait for a shared call included. */
  waitMs: number
  /** Maps a driver's failure to the ServiceError a client may see. */
  guard: <T>(work: () => Promise<T>) => Promise<T>
  /** Whether this write's event should NOTIFY other instances (at most one per interval). */
  claimNotify: (now: number) => boolean
  /** After the commit: wakes this process's dispatchers when the write made deliveries. */
  afterCommit: <T>(result: T, deliveries: number) => T
}

type Queryable = pg.Pool | pg.PoolClient

type PostgresResource<R extends ResourceTypes> = ResourceDefinition<string, string, R>

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

/** A resource's statements, write functions and row reading, made once. */
function table<R extends ResourceTypes> (resource: PostgresResource<R>, context: PostgresRepositoryContext) {
  const names = Object.keys(resource.storage.columns)
  const { list, ...fixed } = tableStatements(resource, context.schema)
  const stored = (row: Row): StoredRow<ColumnValues> => {
    const values: Record<string, unknown> = {}
    for (const name of names) values[name] = row[name]
    // The database enforced the declared kinds and nullability when the row was written.
    const own = values as ColumnValues
    return { id: row.id, values: own, createdAt: Number(row.created_at), updatedAt: Number(row.updated_at) }
  }
  return {
    resource,
    context,
    list,
    run: statementRunner(fixed),
    functions: writeFunctions(resource, context.schema),
    names,
    stored,
    toItem: (row: Row): R['item'] => resource.storage.item(stored(row))
  }
}

type Table<R extends ResourceTypes> = ReturnType<typeof table<R>>

/** A server-assigned id, drawn past the taken ones; past 2^53 - 1 `ids-exhausted`. */
async function withGeneratedId<T> (
  { run, resource }: Pick<Table<ResourceTypes>, 'run'> & { resource: { title: string } },
  db: Queryable, attempt: () => Promise<T | undefined>
): Promise<T> {
  try {
    return await drawFreeId(attempt, async () => await run(db, 'skipTaken'))
  } catch (err) {
    if ((err as { code?: unknown }).code === SEQUENCE_LIMIT_EXCEEDED) throw idsExhausted(resource)
    throw err
  }
}

async function insertRow<R extends ResourceTypes> (
  t: Table<R>, db: Queryable, item: R['create'], now: number
): Promise<Row> {
  const values = valuesInOrder(t.names, t.resource.storage.values(item))
  if (item.id === undefined) {
    return await withGeneratedId(t, db, async () => (await t.run<Row>(db, 'insertGenerated', [...values, now])).rows[0])
  }
  const { rows: [row] } = await t.run<Row>(db, 'insertChosen', [...values, item.id, now])
  if (row === undefined) throw idTaken(t.resource, item.id)
  return row
}

/** A keyed or chosen-id create: a transaction, with the key's lock, the replay rule and the event. */
async function createInTransaction<R extends ResourceTypes> (
  t: Table<R>, item: R['create'], key: IdempotencyKey | undefined, origin: EventOrigin | undefined,
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

interface GeneratedCreate { values: ColumnValues, origin: EventOrigin | undefined }

/** A batch's plain creates in one call: the row; undefined if its id was taken; 'alone' if the JSON is not id-first. */
function generatedCreates<R extends ResourceTypes> (
  t: Table<R>
): CallBatch<GeneratedCreate, Written | undefined | 'alone'> {
  const { resource, context } = t
  return callBatch(async (writes) => {
    const now = Date.now()
    const afters = writes.map(({ values }) =>
      jsonAfterId(resource.json(resource.storage.item({ id: 0n, values, createdAt: now, updatedAt: now })), 0n))
    const made = writes.flatMap((write, i) => afters[i] === undefined ? [] : [{ ...write, after: afters[i] }])
    const outcomes: Array<Written | undefined | 'alone'> =
      afters.map((after) => after === undefined ? 'alone' : undefined)
    if (made.length === 0) return outcomes
    const type = eventType(resource, 'created')
    const around = made.map(({ after }) => eventPayloadAroundId(type, after, now))
    const columns = t.names.map((name) => made.map(({ values }) => values[name]))
    const rows = await boundedQuery<Written & { ordinal: number }>(context.pool, callSql(t.functions.create, [
      ...columns, now, made.map(() => newMessageId()), type, around[0]?.before,
      made.map(({ origin }) => origin?.requestId ?? null), made.map(({ origin }) => origin?.traceparent ?? null),
      around.map(({ after }) => after), context.claimNotify(now), resource.name
    ]))
    const at = afters.flatMap((after, i) => after === undefined ? [] : [i])
    for (const row of rows) outcomes[at[row.ordinal - 1] as number] = row
    return outcomes
  }, { waitMs: context.waitMs })
}

type Change = (current: StoredRow<ColumnValues>) => ColumnValues | 'delete'

/** What `change` makes of the row found, checked against If-Match; no event if it changes nothing (same ETag). */
function plan<R extends ResourceTypes> (
  t: Table<R>, id: bigint, found: Row | undefined, change: Change, ifMatch: IfMatch | undefined,
  origin: EventOrigin | undefined, now: number
) {
  const { resource } = t
  const current = t.stored(writableRow(resource, id, found, ifMatch, t.toItem))
  const next = change(current)
  if (next !== 'delete' && sameValues(t.names, next, current.values)) {
    return { current, next, written: current, result: resource.storage.item(current), event: undefined }
  }
  // updated_at strictly increases, so the ETag changes with every write.
  const written = next === 'delete'
    ? current
    : { ...current, values: next, updatedAt: Math.max(now, current.updatedAt + 1) }
  const result = resource.storage.item(written)
  const event = resourceEvent(resource, next === 'delete' ? 'deleted' : 'updated', result, now, origin)
  return { current, next, written, result, event }
}

/** How often a write of a row as read meets the row changed since, before it locks the row instead. */
const READ_ATTEMPTS = 3

/** A replace, update or delete with its event only if the row is still as read: a lock's effect, no transaction. */
async function writeRow<R extends ResourceTypes> (
  t: Table<R>, id: bigint, change: Change, ifMatch: IfMatch | undefined, origin: EventOrigin | undefined
): Promise<R['item']> {
  const { resource, context, run, functions } = t
  for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
    const now = Date.now()
    const { rows: [found] } = await run<Row>(context.pool, 'get', [id])
    const { current, next, written, result, event: occurred } = plan(t, id, found, change, ifMatch, origin, now)
    if (occurred === undefined) return result
    const message = buildEventMessage(occurred, now)
    // Arrays of one: the functions take a batch's writes.
    const read = [[id], [current.createdAt], [current.updatedAt], ...t.names.map((name) => [current.values[name]])]
    const event = [[message.messageId], message.type, [message.payload], now, [message.requestId],
      [message.traceparent], context.claimNotify(now), resource.name]
    const [row] = await boundedQuery<Written>(context.pool, next === 'delete'
      ? callSql(functions.deleteRead, [...read, ...event])
      : callSql(functions.update, [...t.names.map((name) => [next[name]]), ...read, [written.updatedAt], ...event]))
    if (row !== undefined) return context.afterCommit(result, row.deliveries)
  }
  return await lockedWriteRow(t, id, change, ifMatch, origin)
}

/** writeRow with the row locked, then written with its event in one statement, in one transaction. */
async function lockedWriteRow<R extends ResourceTypes> (
  t: Table<R>, id: bigint, change: Change, ifMatch: IfMatch | undefined, origin: EventOrigin | undefined
): Promise<R['item']> {
  const { context, run } = t
  const now = Date.now()
  let deliveries = 0
  const item = await inTransaction(context.pool, async (client) => {
    const { rows: [locked] } = await run<Row>(client, 'lockRow', [id])
    const { next, written, result, event } = plan(t, id, locked, change, ifMatch, origin, now)
    if (event === undefined) return result
    const eventValues = postgresEventMessageValues(event, now, context.claimNotify(now))
    const { rows: [row] } = next === 'delete'
      ? await run<Written>(client, 'delete', [id, ...eventValues])
      : await run<Written>(client, 'update', [...valuesInOrder(t.names, next), id, written.updatedAt, ...eventValues])
    deliveries = row?.deliveries ?? 0
    return result
  })
  return context.afterCommit(item, deliveries)
}

/** A batch's deletes without If-Match, rows and events (row-json.ts) in one call; undefined for a row not there. */
function deletesInOneCall<R extends ResourceTypes> (
  t: Table<R>, fn: WriteFunction
): CallBatch<{ id: bigint, origin: EventOrigin | undefined }, Written | undefined> {
  const { resource, context } = t
  return callBatch(async (writes) => {
    const now = Date.now()
    const type = eventType(resource, 'deleted')
    const rows = await boundedQuery<Written & { ordinal: number }>(context.pool, callSql(fn, [
      writes.map(({ id }) => id), writes.map(() => newMessageId()), type, eventPayloadHead(type, now), now,
      writes.map(({ origin }) => origin?.requestId ?? null), writes.map(({ origin }) => origin?.traceparent ?? null),
      context.claimNotify(now), resource.name
    ]))
    const outcomes: Array<Written | undefined> = writes.map(() => undefined)
    for (const row of rows) outcomes[row.ordinal - 1] = row
    return outcomes
  }, { waitMs: context.waitMs })
}

/** Concurrent reads by id in one statement (a read alone in its own); undefined for a row not there. */
function readsInOneCall<R extends ResourceTypes> ({ run, context }: Table<R>): CallBatch<bigint, Row | undefined> {
  const { pool } = context
  return callBatch(async (ids) => {
    if (ids.length === 1) return (await run<Row>(pool, 'get', [ids[0]])).rows
    const byId = new Map<bigint, Row>()
    for (const row of (await run<Row>(pool, 'getMany', [ids])).rows) byId.set(row.id, row)
    return ids.map((id) => byId.get(id))
  }, { waitMs: context.waitMs })
}

/** Every resource's repository on PostgreSQL, from its storage declaration. */
export function createPostgresRepository<R extends ResourceTypes> (
  resource: PostgresResource<R>, context: PostgresRepositoryContext
): Repository<R> {
  const t = table(resource, context)
  const { pool, guard } = context
  const { storage } = resource
  const creates = generatedCreates(t)
  const deletes = t.functions.delete === undefined ? undefined : deletesInOneCall(t, t.functions.delete)
  const reads = readsInOneCall(t)
  return {
    async list (query) {
      const { columns, values } = filtersOf(storage, query)
      const { rows } = await guard(async () =>
        await pool.query<Row>(t.list(columns), [query.after ?? 0n, query.limit + 1, ...values]))
      return { items: rows.slice(0, query.limit).map(t.toItem), hasMore: rows.length > query.limit }
    },
    // Chained, not awaited: see docs/performance.md#what-the-measurements-decided.
    get: (id) => guard(() => reads.submit(id))
      .then((row) => row === undefined ? undefined : t.toItem(row)),
    async create (item, key, origin, admit) {
      if (key !== undefined || item.id !== undefined) {
        return await guard(async () => await createInTransaction(t, item, key, origin, admit))
      }
      // Without a key nothing can be replayed: admit before the one-call create.
      admit?.()
      const write = { values: storage.values(item), origin }
      return await guard(async () => {
        const row = await withGeneratedId(t, pool, async () => await creates.submit(write))
        if (row === 'alone') return await createInTransaction(t, item, key, origin, undefined)
        return context.afterCommit({ item: t.toItem(row), replayed: false }, row.deliveries)
      })
    },
    replace: async (id, item, ifMatch, origin) =>
      await guard(async () => await writeRow(t, id, () => storage.values(item), ifMatch, origin)),
    update: async (id, changes, ifMatch, origin) =>
      await guard(async () =>
        await writeRow(t, id, (current) => storage.update(current.values, changes), ifMatch, origin)),
    delete: async (id, ifMatch, origin) => await guard(async () => {
      if (ifMatch !== undefined || deletes === undefined) {
        return await writeRow(t, id, () => 'delete', ifMatch, origin)
      }
      const row = await deletes.submit({ id, origin })
      if (row === undefined) throw notFound(resource, id)
      return context.afterCommit(t.toItem(row), row.deliveries)
    })
  }
}
