import pg from 'pg'
import { openPool, pgTypes } from './types.js'
import type { ResourceEvent } from '../../webhooks/events.js'
import { attemptTexts, toClaimed, type ClaimRow } from '../../webhooks/rows.js'
import type { ClaimRequest, WebhookStore } from '../../webhooks/store-contract.js'
import {
  awaitSteps, checkWebhookSchema, FAN_OUT_ALL_BATCH, webhookOperations, webhookSql, type Steps, type WebhookExecutor
} from '../webhook-store.js'
import {
  inTransaction, parsePostgresUrl, poolStats, settledPool, tablePrefix, type PostgresTarget
} from './connection.js'
import type { PoolStats } from '../pool-stats.js'
import { postgresEventMessageValues, postgresWebhookSql, receives, WEBHOOK_CHANNEL } from './webhook-sql.js'

/** The migration step (see migrations.ts) that completed the webhook tables. */
const WEBHOOK_SCHEMA_VERSION = 9

interface PostgresWebhookStoreOptions {
  url: string
  /** Max connections of each of the two pools (subscriptions and API reads; dispatcher bookkeeping). */
  poolMax?: number
  connectTimeoutMs?: number
  statementTimeoutMs?: number
  /** Failures of idle pooled connections and of the listener; neither crashes the process. */
  onError?: (err: Error) => void
  /** The caller's pools (see PostgresStoreOptions.pools): never ended by the store. */
  pools?: { pool: pg.Pool, bookkeeping: pg.Pool }
  checkSchema?: false
  /** A direct connection to PostgreSQL (a session, never a transaction pooler) for LISTEN; without it, no `listen`. */
  listenUrl?: string
}

/** A claim that fans out takes up this many times its limit of events. */
const FAN_OUT_AHEAD = 4

type Queryable = pg.Pool | pg.PoolClient | pg.ClientBase

type Sql = ReturnType<typeof postgresWebhookSql>

const one = async <R extends pg.QueryResultRow>(db: Queryable, sql: string, values: unknown[] = []) =>
  (await db.query<R>(sql, values)).rows[0] as R | undefined

/** Given a write's client, the change and its event commit as one; how many deliveries the event will become. */
export type EnqueueEvent = (db: Queryable, event: ResourceEvent, now: number, notify: boolean) => Promise<number>

export function postgresEnqueuer (schema: string | undefined): EnqueueEvent {
  const { enqueue } = postgresWebhookSql(schema)
  return async (db, event, now, notify) =>
    (await one<{ deliveries: number }>(db, enqueue, postgresEventMessageValues(event, now, notify)))?.deliveries ?? 0
}

async function checkSchema (sql: Sql, pool: pg.Pool): Promise<void> {
  let version = 0
  try {
    version = (await one<{ version: number | null }>(pool, sql.schemaVersion))?.version ?? 0
  } catch (err) {
    if ((err as { code?: unknown }).code !== '42P01') throw err
  }
  checkWebhookSchema(version, WEBHOOK_SCHEMA_VERSION)
}

function openPools (
  options: PostgresWebhookStoreOptions, target: PostgresTarget
): { pool: pg.Pool, bookkeeping: pg.Pool, end: () => Promise<void>, stats: () => PoolStats[] } {
  const statementTimeoutMs = options.statementTimeoutMs ?? 5000
  // A lock wait can never hold the dispatcher (or a shutdown waiting for it) for long.
  const open = (): pg.Pool => openPool({
    connectionString: target.connectionString,
    application_name: 'plant-store',
    max: options.poolMax ?? 4,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000
  }, statementTimeoutMs, options.onError)
  const own = open()
  const dispatcher = open()
  const pool = settledPool(own, { schema: target.schema, statementTimeoutMs })
  // A crash can only cause a delivery sent again with the same webhook-id (at least once).
  const bookkeeping = settledPool(dispatcher, { schema: target.schema, statementTimeoutMs, asynchronousCommit: true })
  return {
    pool,
    bookkeeping,
    end: async () => { await Promise.all([pool.end(), bookkeeping.end()]) },
    // Read from the pools themselves: a settledPool view has no counts.
    stats: () => [poolStats('webhooks', own), poolStats('dispatcher', dispatcher)]
  }
}

/** LISTENs on a connection of its own, re-made after a pause when lost; wakes once per (re)connection. */
function listener (
  connectionString: string, schema: string | undefined, onError: ((err: Error) => void) | undefined,
  listeners: Set<() => Promise<void>>
) {
  return async function listen (wake: () => void): Promise<() => Promise<void>> {
    let client: pg.Client | undefined
    let stopped = false
    let retryTimer: NodeJS.Timeout | undefined
    let retryMs = 250
    const tryConnect = async (): Promise<void> => await connect().catch((err: unknown) => {
      onError?.(err as Error)
      reconnectLater()
    })
    const reconnectLater = (): void => {
      if (stopped || retryTimer !== undefined) return
      retryTimer = setTimeout(() => {
        retryTimer = undefined
        void tryConnect()
      }, retryMs)
      retryTimer.unref()
      retryMs = Math.min(retryMs * 2, 10_000)
    }
    const connect = async (): Promise<void> => {
      const next = new pg.Client({ connectionString, application_name: 'plant-store', types: pgTypes })
      next.on('error', (err) => { onError?.(err) })
      next.on('end', () => {
        if (client === next) client = undefined
        reconnectLater()
      })
      await next.connect()
      try {
        // What current_schema() is to the writers: DATABASE_URL's schema, or the server's default.
        const { rows: [row] } = await next.query<{ schema: string | null }>(
          'SELECT coalesce($1, current_schema()) AS schema', [schema ?? null])
        const own = row?.schema ?? null
        next.on('notification', (message) => { if (message.payload === own) wake() })
        await next.query(`LISTEN ${WEBHOOK_CHANNEL}`)
      } catch (err) {
        await next.end().catch(() => {})
        throw err
      }
      if (stopped) {
        await next.end()
        return
      }
      client = next
      retryMs = 250
      wake()
    }
    await tryConnect()
    const unsubscribe = async (): Promise<void> => {
      stopped = true
      clearTimeout(retryTimer)
      listeners.delete(unsubscribe)
      const current = client
      client = undefined
      await current?.end().catch(() => {})
    }
    listeners.add(unsubscribe)
    return unsubscribe
  }
}

/** Unnamed statements only: a transaction pooler (PgBouncer) may hand the session to another client between two. */
function postgresExecutor (pool: pg.Pool, bookkeeping: pg.Pool): WebhookExecutor {
  const run = async <T>(db: Queryable, steps: Steps<T>): Promise<T> =>
    await awaitSteps(steps, async ({ sql, values }) => {
      const { rows, rowCount } = await db.query(sql, values as unknown[])
      return { rows, changes: rowCount ?? 0 }
    })
  return {
    peek: async (steps, via) => await run(via?.dispatcher === true ? bookkeeping : pool, steps),
    settle: async (value) => value,
    async write (steps, via) {
      const db = via?.dispatcher === true ? bookkeeping : pool
      // A lone statement is one round trip; the bookkeeping pool gives each one a transaction of its own.
      if (via?.alone === true) return await run(db, steps)
      return await inTransaction(db, async (client) => await run(client, steps))
    },
    async bookkeep (transactions) {
      for (const steps of transactions) await inTransaction(bookkeeping, async (client) => await run(client, steps))
    }
  }
}

/** SKIP LOCKED: rows another instance is claiming are passed over, never taken twice. */
function postgresClaims (sql: Sql, bookkeeping: pg.Pool): Pick<WebhookStore, 'claimDue'> {
  const fanOut = async (limit: number): Promise<number> =>
    (await one<{ events: number }>(bookkeeping, sql.fanOut, [limit]))?.events ?? 0
  /** Whether the last claim fell short: the next fans out before it claims. */
  let fanOutFirst = true
  /** Full claims of due deliveries (retries) never keep new events waiting longer than FAN_OUT_AHEAD claims. */
  let claimsSinceFanOut = 0
  return {
    async claimDue ({ lease, now, leaseMs, limit, perSubscription, skipSubscriptions, skipOwners = [] }: ClaimRequest) {
      // After a short claim, events become deliveries first: a new event is sent after two round trips, not three.
      // FAN_OUT_AHEAD claims' worth, never every event: the outbox holds them as cheap rows while the API is busy.
      const claim = async (count: number): Promise<ClaimRow[]> => (await bookkeeping.query<ClaimRow>(sql.claim,
        [lease, now, now + leaseMs, count, perSubscription, skipSubscriptions.map(String), [...skipOwners]])).rows
      let rows: ClaimRow[]
      if (fanOutFirst || claimsSinceFanOut >= FAN_OUT_AHEAD) {
        claimsSinceFanOut = 0
        await fanOut(limit * FAN_OUT_AHEAD)
        rows = await claim(limit)
      } else {
        claimsSinceFanOut++
        rows = await claim(limit)
        if (rows.length < limit && await fanOut(limit * FAN_OUT_AHEAD) > 0) {
          claimsSinceFanOut = 0
          rows.push(...await claim(limit - rows.length))
        }
      }
      fanOutFirst = rows.length < limit
      return rows.map((row) => toClaimed(row, now))
    }
  }
}

export async function createPostgresWebhookStore (options: PostgresWebhookStoreOptions): Promise<WebhookStore> {
  const target = parsePostgresUrl(options.url)
  const t = tablePrefix(target.schema)
  const own = postgresWebhookSql(target.schema)
  const { pool, bookkeeping, end, stats } = options.pools === undefined
    ? openPools(options, target)
    : { ...options.pools, end: async () => {}, stats: undefined }
  try {
    if (options.checkSchema !== false) await checkSchema(own, pool)
  } catch (err) {
    await end()
    throw err
  }
  const sql = webhookSql({
    t,
    nextEventId: `(SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM ${t}webhook_events_id_seq)`,
    receives,
    lockOwner: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 33))'
  })
  const listeners = new Set<() => Promise<void>>()
  let closed = false
  const enqueue = postgresEnqueuer(target.schema)
  return {
    ...webhookOperations({
      ...postgresExecutor(pool, bookkeeping),
      sql,
      events: (types) => [...types],
      // On the durable pool: a listing never shows a delivery a crash could take back.
      async fanOutAll () {
        while ((await one<{ events: number }>(pool, own.fanOut, [FAN_OUT_ALL_BATCH]))?.events === FAN_OUT_ALL_BATCH);
      },
      succeedMany: (done) => ({
        sql: own.succeedMany,
        values: [
          done.map(({ id }) => String(id)), done.map(({ lease }) => lease), done.map(({ attemptedAt }) => attemptedAt),
          done.map(({ statusCode }) => statusCode ?? null), done.map(({ durationMs }) => Math.round(durationMs ?? 0)),
          done.map((completion) => attemptTexts(completion).body)
        ]
      })
    }),
    enqueue: async (event, now) => await enqueue(pool, event, now, true),
    ...postgresClaims(own, bookkeeping),
    async renewLeases (leases, until) {
      if (leases.length === 0) return
      await bookkeeping.query(own.renew, [leases.map(({ id }) => String(id)), leases.map(({ lease }) => lease), until])
    },
    async releaseDeliveries (lease, ids) {
      if (ids.length > 0) await bookkeeping.query(own.release, [lease, ids.map(String)])
    },
    ...(stats !== undefined && { poolStats: stats }),
    ...(options.listenUrl !== undefined && {
      listen: listener(parsePostgresUrl(options.listenUrl).connectionString, target.schema, options.onError, listeners)
    }),
    async close () {
      if (closed) return
      closed = true
      await Promise.all([...listeners].map(async (unsubscribe) => { await unsubscribe() }))
      await end()
    }
  }
}
