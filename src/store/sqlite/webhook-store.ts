import Database from 'better-sqlite3'
import { flag, toClaimed, type ClaimRow } from '../../webhooks/rows.js'
import type { ClaimedDelivery, ClaimRequest, WebhookStore } from '../../webhooks/store-contract.js'
import {
  checkWebhookSchema, FAN_OUT_ALL_BATCH, fanOutSql, query, receives as sharedReceives, row, rows, runSteps,
  webhookOperations, webhookSql, type Answer, type Statement, type Steps, type WebhookExecutor
} from '../webhook-store.js'
import { configureConnection } from './connection.js'
import { enqueueSqliteEvent } from './outbox.js'

/** The migration step (see migrations.ts) that completed the webhook tables. */
const WEBHOOK_SCHEMA_VERSION = 10

/** `awaitSync: false` answers once committed, without waiting for the flush. */
type SqliteWriteRunner =
  <T>(transaction: Database.Transaction<() => T>, options?: { awaitSync?: boolean }) => Promise<T>

interface SqliteWebhookStoreOptions {
  /** Opened with `defaultSafeIntegers(true)`: the plant store's own connection, or one on the same file. */
  db: Database.Database
  write?: SqliteWriteRunner
  /** Holds a read's answer until what is committed is durable: no answer shows a write that could be lost. */
  afterDurable?: <T>(value: T) => T | Promise<T>
  ownsDb?: boolean
  listen?: WebhookStore['listen']
  /** Inside the write's transaction: the plant store then re-checks whether any subscription is enabled. */
  onSubscriptionsChanged?: () => void
}

const receives = (eventId: string, type: string): string =>
  sharedReceives(eventId, `instr(' ' || s.events || ' ', ' ' || ${type} || ' ') > 0`, 's.disabled = 0')

const FAN_OUT_BATCH = 64

const SQL = {
  receiverCount: `SELECT count(*) AS n FROM webhook_subscriptions s WHERE ${receives('$1', '$2')}`,
  anyEvents: 'SELECT EXISTS (SELECT 1 FROM webhook_events) AS found',
  nextEvents: `SELECT count(*) AS events, max(id) AS last
               FROM (SELECT id FROM webhook_events ORDER BY id LIMIT CAST($1 AS INTEGER))`,
  fanOut: `${fanOutSql('', receives, 'webhook_events e')} WHERE e.id <= $1 ORDER BY e.id, s.id`,
  deleteEvents: 'DELETE FROM webhook_events WHERE id <= $1',
  // Per subscription its oldest due deliveries, round robin between owners, then an owner's
  // subscriptions. CROSS JOIN keeps subscriptions the outer loop: index probes, not a scan.
  due: `SELECT id, subscription_id, owner, message_id, event_type, payload, attempts, url, secret, previous_secrets,
               request_id, traceparent
        FROM (
          SELECT *, row_number() OVER (PARTITION BY owner ORDER BY rs, next_attempt_at, id) AS ro FROM (
            SELECT d.id, d.subscription_id, s.owner, d.message_id, d.event_type, d.payload, d.attempts,
                   s.url, s.secret, s.previous_secrets, d.request_id, d.traceparent, d.next_attempt_at,
                   row_number() OVER (PARTITION BY s.id ORDER BY d.next_attempt_at, d.id) AS rs
            FROM webhook_subscriptions s
            CROSS JOIN webhook_deliveries d ON d.id IN (
              SELECT x.id FROM webhook_deliveries x
              WHERE x.subscription_id = s.id AND x.status = 'pending' AND x.next_attempt_at <= $1
                AND (x.lease_until IS NULL OR x.lease_until <= $1)
              ORDER BY x.next_attempt_at, x.id LIMIT CAST($2 AS INTEGER))
            WHERE s.disabled = 0))
        ORDER BY ro, next_attempt_at, id LIMIT CAST($3 AS INTEGER)`,
  lease: 'UPDATE webhook_deliveries SET lease = $1, lease_until = $2 WHERE id = $3',
  // Reads first: an idle service must not pay a write transaction (and an fdatasync) every poll.
  anyDue: `SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $1
                          AND (lease_until IS NULL OR lease_until <= $1)) AS found`,
  anyLeased: 'SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE lease IS NOT NULL) AS found',
  releaseAll: 'UPDATE webhook_deliveries SET lease = NULL, lease_until = NULL WHERE lease IS NOT NULL',
  release: `UPDATE webhook_deliveries SET lease = NULL, lease_until = NULL
            WHERE lease = $1 AND id IN (SELECT value FROM json_each($2))`
}

/** A connection of its own to a database the plant store has already migrated. */
export function openSqliteWebhookDatabase (filename: string): Database.Database {
  return configureConnection(new Database(filename, { fileMustExist: filename !== ':memory:' }))
}

/** PostgreSQL's casts and row locks dropped (one writer); a LIMIT cast so its plan does not depend on its value. */
function sqliteText (sql: string): { text: string, order: number[] } {
  const order: number[] = []
  const text = sql
    .replace(/::\w+(\[\])?/g, '')
    .replace(/\s+FOR (NO KEY )?UPDATE( SKIP LOCKED)?/g, '')
    .replace(/\bgreatest\(/g, 'max(')
    .replace(/LIMIT (\$\d+)/g, 'LIMIT CAST($1 AS INTEGER)')
    .replace(/\$(\d+)/g, (_, n: string) => {
      order.push(Number(n) - 1)
      return '?'
    })
  return { text, order }
}

const NO_ROWS: readonly unknown[] = []

/** The writes go through `write`: the group commit. */
function sqliteExecutor (
  db: Database.Database, write: SqliteWriteRunner, durable: <T>(value: T) => T | Promise<T>
): WebhookExecutor {
  const prepared = new Map<string, { statement: Database.Statement<unknown[], unknown>, order: number[] }>()
  const answer = ({ sql, values }: Statement): Answer => {
    let entry = prepared.get(sql)
    if (entry === undefined) {
      const { text, order } = sqliteText(sql)
      entry = { statement: db.prepare<unknown[], unknown>(text), order }
      prepared.set(sql, entry)
    }
    const { statement, order } = entry
    const bound = new Array<unknown>(order.length)
    for (let i = 0; i < order.length; i++) {
      const value = values[order[i] as number]
      bound[i] = typeof value === 'boolean' ? Number(value) : value
    }
    return statement.reader
      ? { rows: statement.all(...bound), changes: 0 }
      : { rows: NO_ROWS, changes: statement.run(...bound).changes }
  }
  return {
    peek: async (steps) => runSteps(steps, answer),
    settle: async (value) => await durable(value),
    write: async (steps) => await write(db.transaction(() => runSteps(steps, answer))),
    async bookkeep (transactions) {
      const all = db.transaction(() => { for (const steps of transactions) runSteps(steps, answer) })
      await write(all, { awaitSync: false })
    }
  }
}

/** Makes up to `limit` events deliveries, oldest first; how many. */
function * fanOut (limit: number): Steps<number> {
  const next = yield * row<{ events: bigint, last: bigint | null }>(SQL.nextEvents, [limit])
  if (next?.last == null) return 0
  yield * query(SQL.fanOut, [next.last])
  yield * query(SQL.deleteEvents, [next.last])
  return Number(next.events)
}

/** `anyDue`: whether one was due just before (when not, events are fanned out first). */
function * claim (
  { lease, now, leaseMs, limit, perSubscription, skipSubscriptions, skipOwners = [] }: ClaimRequest, anyDue: boolean
): Steps<ClaimedDelivery[]> {
  const skip = new Set(skipSubscriptions)
  const skipOwner = new Set(skipOwners)
  // Skipped owners are filtered after the limit, so every candidate is read then.
  const candidates = skipOwner.size > 0 ? Number.MAX_SAFE_INTEGER : limit + perSubscription * skip.size
  const due = function * (): Steps<ClaimRow[]> {
    return (yield * rows<ClaimRow>(SQL.due, [now, perSubscription, candidates]))
      .filter((found) => !skip.has(found.subscription_id) && !skipOwner.has(found.owner))
  }
  // Events become deliveries only when what is due falls short: see docs/performance.md#what-the-measurements-decided.
  if (!anyDue) yield * fanOut(Math.max(FAN_OUT_BATCH, limit))
  let found = yield * due()
  if (anyDue && found.length < limit && (yield * fanOut(Math.max(FAN_OUT_BATCH, limit))) > 0) found = yield * due()
  const claimed: ClaimedDelivery[] = []
  for (const delivery of found.slice(0, limit)) {
    yield * query(SQL.lease, [lease, now + leaseMs, delivery.id])
    claimed.push(toClaimed(delivery, now))
  }
  return claimed
}

export function createSqliteWebhookStore (options: SqliteWebhookStoreOptions): WebhookStore {
  const { db } = options
  checkWebhookSchema(Number(db.pragma('user_version', { simple: true })), WEBHOOK_SCHEMA_VERSION)
  const x = sqliteExecutor(db, options.write ?? (async (transaction) => transaction.immediate()),
    options.afterDurable ?? (<T>(value: T): T => value))
  const any = async (sql: string, values: unknown[] = []): Promise<boolean> =>
    flag((await x.peek(row<{ found: unknown }>(sql, values)))?.found)
  const sql = webhookSql({
    t: '',
    nextEventId: "(SELECT coalesce(max(seq), 0) + 1 FROM sqlite_sequence WHERE name = 'webhook_events')",
    receives,
    deleteDeliveries: true
  })
  return {
    ...webhookOperations({
      ...x,
      sql,
      events: (types) => types.join(' '),
      ...(options.onSubscriptionsChanged !== undefined && { changed: options.onSubscriptionsChanged }),
      async fanOutAll () {
        while (await any(SQL.anyEvents)) await x.bookkeep([fanOut(FAN_OUT_ALL_BATCH)])
      }
    }),
    enqueue: async (event, now) => await x.write((function * () {
      const eventId = enqueueSqliteEvent(db, event, now)
      return Number((yield * row<{ n: bigint }>(SQL.receiverCount, [eventId, event.type]))?.n ?? 0)
    })()),
    async claimDue (request) {
      const anyDue = await any(SQL.anyDue, [request.now])
      if (!anyDue && !await any(SQL.anyEvents)) return []
      let claimed: ClaimedDelivery[] = []
      await x.bookkeep([(function * () { claimed = yield * claim(request, anyDue) })()])
      // Nothing is sent before its event is on disk: the fanned-out events may not be flushed yet.
      return claimed.length === 0 ? claimed : await x.settle(claimed)
    },
    async releaseDeliveries (lease, ids) {
      if (ids.length > 0) await x.bookkeep([query(SQL.release, [lease, JSON.stringify(ids.map(Number))])])
    },
    releaseOrphanedLeases: async () => await any(SQL.anyLeased) ? (await x.write(query(SQL.releaseAll))).changes : 0,
    ...(options.listen !== undefined && { listen: options.listen }),
    async close () {
      if (options.ownsDb === true && db.open) db.close()
    }
  }
}
