import pg from 'pg'
import { pgTypes } from './types.js'
import type { ResourceEvent } from '../../webhooks/events.js'
import { attemptTexts, toClaimed, type ClaimRow } from '../../webhooks/rows.js'
import type {
  Backlog, ClaimRequest, CompletionResult, DeliveryCompletion, WebhookStore
} from '../../webhooks/store-contract.js'
import {
  checkWebhookSchema, disablesSubscription, FAN_OUT_ALL_BATCH, inBatches, PRUNE_BATCH
} from '../webhook-rules.js'
import {
  inTransaction, parsePostgresUrl, poolStats, queryTimeout, statementRunner, settledPool, survivingDisconnects,
  type PostgresTarget, type RunStatement
} from './connection.js'
import type { PoolStats } from '../pool-stats.js'
import { postgresDeliveryLog, postgresSubscriptions } from './subscriptions.js'
import { postgresEventMessageValues, WEBHOOK_CHANNEL, webhookStatements } from './webhook-sql.js'

/** The migration step (see migrations.ts) that completed the webhook tables (the event outbox). */
export const WEBHOOK_SCHEMA_VERSION = 9

export interface PostgresWebhookStoreOptions {
  url: string
  /** Max connections of each of the two pools (subscriptions and API reads; dispatcher bookkeeping). */
  poolMax?: number
  connectTimeoutMs?: number
  statementTimeoutMs?: number
  /** Failures of idle pooled connections and of the listener; neither crashes the process. */
  onError?: (err: Error) => void
  /** The caller's pools (see PostgresStoreOptions.pools): never ended by the store. */
  pools?: { pool: pg.Pool, bookkeeping: pg.Pool }
  /** `false`: the caller has checked the schema. */
  checkSchema?: false
  /** A direct connection to PostgreSQL (a session, never a transaction pooler) for LISTEN; without it, no `listen`. */
  listenUrl?: string
}

/** A claim that fans out takes up this many times its limit of events. */
const FAN_OUT_AHEAD = 4

type Queryable = pg.Pool | pg.PoolClient | pg.ClientBase

type Run = RunStatement<keyof ReturnType<typeof webhookStatements>>

const runner = (schema: string | undefined): Run => statementRunner(webhookStatements(schema))

/** Writes an event to the outbox inside a write's own transaction: the change and its event commit as one. */
export type EnqueueEvent =
  (client: pg.ClientBase, event: ResourceEvent, now: number, notify: boolean) => Promise<number>

/** Resolves with how many deliveries the event will become. */
export function postgresEnqueuer (schema: string | undefined): EnqueueEvent {
  const run = runner(schema)
  return async (client, event, now, notify) => await enqueueOn(run, client, event, now, notify)
}

async function enqueueOn (
  run: Run, db: Queryable, event: ResourceEvent, now: number, notify: boolean
): Promise<number> {
  const { rows: [row] } =
    await run<{ deliveries: number }>(db, 'enqueue', postgresEventMessageValues(event, now, notify))
  return row?.deliveries ?? 0
}

async function checkSchema (run: Run, pool: pg.Pool): Promise<void> {
  let version = 0
  try {
    version = (await run<{ version: number | null }>(pool, 'schemaVersion')).rows[0]?.version ?? 0
  } catch (err) {
    if ((err as { code?: unknown }).code !== '42P01') throw err
  }
  checkWebhookSchema(version, WEBHOOK_SCHEMA_VERSION)
}

/** The API's pool, and the dispatcher's bookkeeping pool with asynchronous commit. */
function openPools (
  options: PostgresWebhookStoreOptions, target: PostgresTarget
): { pool: pg.Pool, bookkeeping: pg.Pool, end: () => Promise<void>, stats: () => PoolStats[] } {
  const statementTimeoutMs = options.statementTimeoutMs ?? 5000
  // A lock wait can never hold the dispatcher (or a shutdown waiting for it) for long.
  const open = (): pg.Pool => survivingDisconnects(new pg.Pool({
    connectionString: target.connectionString,
    application_name: 'plant-store',
    max: options.poolMax ?? 4,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    ...queryTimeout(statementTimeoutMs),
    types: pgTypes
  }), options.onError)
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
    const reconnectLater = (): void => {
      if (stopped || retryTimer !== undefined) return
      retryTimer = setTimeout(() => {
        retryTimer = undefined
        connect().catch((err: unknown) => {
          onError?.(err as Error)
          reconnectLater()
        })
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
    await connect().catch((err: unknown) => {
      onError?.(err as Error)
      reconnectLater()
    })
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

/** Records attempts if their leases still hold, with each subscription's health after them. */
function postgresCompletions (
  run: Run, bookkeeping: pg.Pool
): Pick<WebhookStore, 'completeDelivery' | 'completeDeliveries'> {
  const notRecorded = { recorded: false, subscriptionDisabled: false }
  async function fail (done: DeliveryCompletion): Promise<CompletionResult> {
    const { rows: [leased] } =
      await run<{ subscription_id: bigint }>(bookkeeping, 'leasedSubscription', [done.id, done.lease])
    if (leased === undefined) return notRecorded
    const subscriptionId = leased.subscription_id
    return await inTransaction(bookkeeping, async (client) => {
      const { rows: [health] } =
        await run<{ disabled: boolean, failing_since: bigint | null }>(client, 'lockSubscription', [subscriptionId])
      const next = done.status === 'pending' ? done.nextAttemptAt ?? done.attemptedAt : null
      const { error, body } = attemptTexts(done)
      const { rowCount } = await run(client, 'finish',
        [done.id, done.lease, done.status, next, done.attemptedAt, done.statusCode ?? null, error])
      if (rowCount !== 1 || health === undefined) return notRecorded
      await run(client, 'recordAttempt',
        [done.id, done.attemptedAt, Math.round(done.durationMs ?? 0), done.statusCode ?? null, error, body])
      const disable = disablesSubscription(done, health.failing_since === null ? null : Number(health.failing_since))
      await run(client, 'failedAttempt', [subscriptionId, done.attemptedAt, disable])
      return { recorded: true, subscriptionDisabled: disable && !health.disabled }
    })
  }
  async function complete (done: DeliveryCompletion): Promise<CompletionResult> {
    if (done.status !== 'succeeded') return await fail(done)
    const { rows: [row] } = await run<{ recorded: number }>(bookkeeping, 'succeed',
      [done.id, done.lease, done.attemptedAt, done.statusCode ?? null, Math.round(done.durationMs ?? 0),
        attemptTexts(done).body])
    return { recorded: row?.recorded === 1, subscriptionDisabled: false }
  }
  async function completeMany (completions: readonly DeliveryCompletion[]): Promise<CompletionResult[]> {
    const results = new Array<CompletionResult | undefined>(completions.length)
    const succeeded = completions.filter((done) => done.status === 'succeeded')
    if (succeeded.length > 0) {
      const { rows } = await run<{ id: bigint }>(bookkeeping, 'succeedMany', [
        succeeded.map(({ id }) => String(id)), succeeded.map(({ lease }) => lease),
        succeeded.map(({ attemptedAt }) => attemptedAt), succeeded.map(({ statusCode }) => statusCode ?? null),
        succeeded.map(({ durationMs }) => Math.round(durationMs ?? 0)),
        succeeded.map((done) => attemptTexts(done).body)
      ])
      const recorded = new Set(rows.map(({ id }) => id))
      completions.forEach((done, i) => {
        if (done.status === 'succeeded') results[i] = { recorded: recorded.has(done.id), subscriptionDisabled: false }
      })
    }
    // Failures take the transaction that applies the disable rule, one at a time: a fast receiver mostly succeeds.
    for (const [i, done] of completions.entries()) {
      if (done.status !== 'succeeded') results[i] = await fail(done)
    }
    return results as CompletionResult[]
  }
  return { completeDelivery: complete, completeDeliveries: completeMany }
}

/** A listing fans out on the durable pool (`db`): it never shows a delivery a crash could take back. */
async function fanOut (run: Run, db: pg.Pool, limit: number): Promise<number> {
  const { rows: [row] } = await run<{ events: number }>(db, 'fanOut', [limit])
  return row?.events ?? 0
}

/**
 * Per subscription its oldest due deliveries, round robin between owners, then an owner's
 * subscriptions. SKIP LOCKED: rows another instance is claiming are passed over, never taken twice.
 */
function postgresClaims (run: Run, bookkeeping: pg.Pool): Pick<WebhookStore, 'claimDue'> {
  /** Whether the last claim fell short: the next fans out before it claims. */
  let fanOutFirst = true
  /** Full claims of due deliveries (retries) never keep new events waiting longer than FAN_OUT_AHEAD claims. */
  let claimsSinceFanOut = 0
  return {
    async claimDue ({ lease, now, leaseMs, limit, perSubscription, skipSubscriptions, skipOwners = [] }: ClaimRequest) {
      // After a claim that fell short, waiting events become deliveries first: a new event reaches
      // its receiver after two round trips, not three. FAN_OUT_AHEAD claims' worth, so while claims
      // come back full the next ones skip that round trip; never every event at once: while the API
      // is busy the dispatcher claims one at a time, and a batch of 64 per claim fanned out every
      // event (a delivery row with its body and three index entries per create, 0.65 of create
      // throughput in the benchmark), where the outbox should hold them as cheap rows.
      const claim = async (count: number): Promise<ClaimRow[]> => (await run<ClaimRow>(bookkeeping, 'claim',
        [lease, now, now + leaseMs, count, perSubscription, skipSubscriptions.map(String), [...skipOwners]])).rows
      let rows: ClaimRow[]
      if (fanOutFirst || claimsSinceFanOut >= FAN_OUT_AHEAD) {
        claimsSinceFanOut = 0
        await fanOut(run, bookkeeping, limit * FAN_OUT_AHEAD)
        rows = await claim(limit)
      } else {
        claimsSinceFanOut++
        rows = await claim(limit)
        if (rows.length < limit && await fanOut(run, bookkeeping, limit * FAN_OUT_AHEAD) > 0) {
          claimsSinceFanOut = 0
          rows.push(...await claim(limit - rows.length))
        }
      }
      fanOutFirst = rows.length < limit
      return rows.map((row) => toClaimed(row, now))
    }
  }
}

/** Leases, pruning and what metrics read. */
function postgresUpkeep (
  run: Run, pool: pg.Pool, bookkeeping: pg.Pool
): Pick<WebhookStore, 'renewLeases' | 'releaseDeliveries' | 'pruneDeliveries' | 'activeOwners' | 'backlog' | 'empty'> {
  return {
    async renewLeases (leases, until) {
      if (leases.length === 0) return
      await run(bookkeeping, 'renew', [leases.map(({ id }) => String(id)), leases.map(({ lease }) => lease), until])
    },
    async releaseDeliveries (lease, ids) {
      if (ids.length > 0) await run(bookkeeping, 'release', [lease, ids.map(String)])
    },
    pruneDeliveries: async (before) =>
      await inBatches(async () => (await run(bookkeeping, 'prune', [before, PRUNE_BATCH])).rowCount ?? 0),
    activeOwners: async () => (await run<{ n: number }>(bookkeeping, 'activeOwners')).rows[0]?.n ?? 0,
    empty: async () => (await run<{ empty: boolean }>(pool, 'empty')).rows[0]?.empty === true,
    async backlog (): Promise<Backlog> {
      const { rows: [row] } = await run<{ pending: number, oldest: bigint | null }>(pool, 'backlog')
      return { pending: row?.pending ?? 0, oldestCreatedAt: row?.oldest == null ? undefined : Number(row.oldest) }
    }
  }
}

export async function createPostgresWebhookStore (options: PostgresWebhookStoreOptions): Promise<WebhookStore> {
  const target = parsePostgresUrl(options.url)
  const run = runner(target.schema)
  const { pool, bookkeeping, end, stats } = options.pools === undefined
    ? openPools(options, target)
    : { ...options.pools, end: async () => {}, stats: undefined }
  try {
    if (options.checkSchema !== false) await checkSchema(run, pool)
  } catch (err) {
    await end()
    throw err
  }
  const listeners = new Set<() => Promise<void>>()
  let closed = false
  return {
    ...postgresSubscriptions(pool, target.schema),
    ...postgresDeliveryLog(pool, target.schema,
      async () => { while (await fanOut(run, pool, FAN_OUT_ALL_BATCH) === FAN_OUT_ALL_BATCH); }),
    enqueue: async (event, now) => await enqueueOn(run, pool, event, now, true),
    ...postgresClaims(run, bookkeeping),
    ...postgresCompletions(run, bookkeeping),
    ...postgresUpkeep(run, pool, bookkeeping),
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
