import Database from 'better-sqlite3'
import { attemptTexts, toClaimed, type ClaimRow } from '../../webhooks/rows.js'
import type {
  Backlog, ClaimedDelivery, ClaimRequest, CompletionResult, DeliveryCompletion, WebhookStore
} from '../../webhooks/store-contract.js'
import {
  checkWebhookSchema, disablesSubscription, FAN_OUT_ALL_BATCH, inBatches, PRUNE_BATCH, receives as sharedReceives
} from '../webhook-rules.js'
import { boundLimit, configureConnection } from './connection.js'
import { enqueueSqliteEvent } from './outbox.js'
import { sqliteDeliveryLog, sqliteSubscriptions, type SqliteWebhookContext } from './subscriptions.js'

/** The migration step (see migrations.ts) that completed the webhook tables (the event outbox). */
export const WEBHOOK_SCHEMA_VERSION = 10

/** Runs a write transaction; `awaitSync: false` answers once committed, without waiting for the flush. */
export type SqliteWriteRunner =
  <T>(transaction: Database.Transaction<() => T>, options?: { awaitSync?: boolean }) => Promise<T>

export interface SqliteWebhookStoreOptions {
  /** Opened with `defaultSafeIntegers(true)`: the plant store's own connection, or one on the same file. */
  db: Database.Database
  write?: SqliteWriteRunner
  /** Holds a read's answer until what is committed is durable, so no answer shows a write that could be lost. */
  afterDurable?: <T>(value: T) => T | Promise<T>
  ownsDb?: boolean
  listen?: WebhookStore['listen']
  /**
   * Called inside the write's transaction when subscriptions change: the plant store then re-checks whether any is
   * enabled.
   */
  onSubscriptionsChanged?: () => void
}

const receives = (eventId: string, type: string): string =>
  sharedReceives(eventId, `instr(' ' || s.events || ' ', ' ' || ${type} || ' ') > 0`, 's.disabled = 0')

const FAN_OUT_BATCH = 64

/** A connection of its own to a database the plant store has already migrated. */
export function openSqliteWebhookDatabase (filename: string): Database.Database {
  return configureConnection(new Database(filename, { fileMustExist: filename !== ':memory:' }))
}

function checkSchema (db: Database.Database): void {
  checkWebhookSchema(Number(db.pragma('user_version', { simple: true })), WEBHOOK_SCHEMA_VERSION)
}

function outboxStatements (db: Database.Database) {
  return {
    receiverCount: db.prepare<[{ eventId: bigint, type: string }], bigint>(
      `SELECT count(*) FROM webhook_subscriptions s WHERE ${receives('@eventId', '@type')}`).pluck(),
    anyEvents: db.prepare<[], bigint>('SELECT EXISTS (SELECT 1 FROM webhook_events)').pluck(),
    nextEvents: db.prepare<[number], { events: bigint, last: bigint | null }>(
      `SELECT count(*) AS events, max(id) AS last
       FROM (SELECT id FROM webhook_events ORDER BY id LIMIT ${boundLimit()})`),
    fanOut: db.prepare<[bigint], unknown>(
      `INSERT INTO webhook_deliveries
         (subscription_id, message_id, event_type, payload, status, attempts, next_attempt_at, created_at, request_id,
          traceparent)
       SELECT s.id, e.message_id, e.event_type, e.payload, 'pending', 0, e.created_at, e.created_at, e.request_id,
              e.traceparent
       FROM webhook_events e JOIN webhook_subscriptions s ON ${receives('e.id', 'e.event_type')}
       WHERE e.id <= ? ORDER BY e.id, s.id`),
    deleteEvents: db.prepare<[bigint], unknown>('DELETE FROM webhook_events WHERE id <= ?'),
    eventBacklog: db.prepare<[], { pending: bigint, oldest: bigint | null }>(
      `SELECT count(*) AS pending, min(e.created_at) AS oldest
       FROM webhook_events e JOIN webhook_subscriptions s ON ${receives('e.id', 'e.event_type')}`)
  }
}

function claimStatements (db: Database.Database) {
  return {
    // Per subscription its oldest due deliveries, round robin between owners, then an owner's
    // subscriptions. CROSS JOIN keeps subscriptions the outer loop: index probes, not a scan.
    dueCandidates: db.prepare<[{ now: number, limit: number, cap: number }], ClaimRow>(
      `SELECT id, subscription_id, owner, message_id, event_type, payload, attempts, url, secret, previous_secrets,
              request_id, traceparent
       FROM (
         SELECT *, row_number() OVER (PARTITION BY owner ORDER BY rs, next_attempt_at, id) AS ro FROM (
           SELECT d.id, d.subscription_id, s.owner, d.message_id, d.event_type, d.payload, d.attempts,
                  s.url, s.secret, s.previous_secrets, d.request_id, d.traceparent, d.next_attempt_at,
                  row_number() OVER (PARTITION BY s.id ORDER BY d.next_attempt_at, d.id) AS rs
           FROM webhook_subscriptions s
           CROSS JOIN webhook_deliveries d ON d.id IN (
             SELECT x.id FROM webhook_deliveries x
             WHERE x.subscription_id = s.id AND x.status = 'pending' AND x.next_attempt_at <= @now
               AND (x.lease_until IS NULL OR x.lease_until <= @now)
             ORDER BY x.next_attempt_at, x.id LIMIT ${boundLimit('cap')})
           WHERE s.disabled = 0))
       ORDER BY ro, next_attempt_at, id LIMIT ${boundLimit('limit')}`),
    lease: db.prepare<[string, number, bigint], unknown>(
      'UPDATE webhook_deliveries SET lease = ?, lease_until = ? WHERE id = ?'),
    // Reads first: an idle service must not pay a write transaction (and an fdatasync) every poll.
    anyDue: db.prepare<[{ now: number }], bigint>(
      `SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= @now
                      AND (lease_until IS NULL OR lease_until <= @now))`).pluck(),
    anyLeased: db.prepare<[], bigint>(
      'SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE lease IS NOT NULL)').pluck(),
    releaseAll: db.prepare<[], unknown>(
      'UPDATE webhook_deliveries SET lease = NULL, lease_until = NULL WHERE lease IS NOT NULL'),
    release: db.prepare<[string, string], unknown>(
      'UPDATE webhook_deliveries SET lease = NULL, lease_until = NULL ' +
      'WHERE lease = ? AND id IN (SELECT value FROM json_each(?))')
  }
}

function completionStatements (db: Database.Database) {
  return {
    finish: db.prepare<[{
      id: bigint,
      lease: string,
      status: string,
      next: number | null,
      at: number,
      code: number | null,
      error: string | null
    }], { subscription_id: bigint }>(
      `UPDATE webhook_deliveries SET status = @status, attempts = attempts + 1, next_attempt_at = @next,
         lease = NULL, lease_until = NULL, last_attempt_at = @at, last_status_code = @code, last_error = @error
       WHERE id = @id AND lease = @lease RETURNING subscription_id`),
    recordAttempt: db.prepare<[{
      id: bigint, at: number, duration: number, code: number | null, error: string | null, body: string | null
    }], unknown>(
      `INSERT INTO webhook_attempts (delivery_id, at, duration_ms, status_code, error, response_body)
       VALUES (@id, @at, @duration, @code, @error, @body)`),
    subscriptionHealth: db.prepare<[bigint], { disabled: bigint, failing_since: bigint | null }>(
      'SELECT disabled, failing_since FROM webhook_subscriptions WHERE id = ?'),
    succeeded: db.prepare<[bigint], unknown>(
      'UPDATE webhook_subscriptions SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL'),
    failedAttempt: db.prepare<[{ id: bigint, at: number, disable: number }], unknown>(
      `UPDATE webhook_subscriptions SET failing_since = coalesce(failing_since, @at),
         disabled = CASE WHEN @disable THEN 1 ELSE disabled END,
         updated_at = CASE WHEN @disable AND disabled = 0 THEN max(@at, updated_at + 1) ELSE updated_at END
       WHERE id = @id`)
  }
}

function upkeepStatements (db: Database.Database) {
  return {
    activeOwners: db.prepare<[], bigint>(
      'SELECT count(DISTINCT owner) FROM webhook_subscriptions WHERE disabled = 0').pluck(),
    anyPrunable: db.prepare<[number], bigint>(
      'SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE created_at < ?)').pluck(),
    prune: db.prepare<[number, number], unknown>(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries
         WHERE created_at < ?
           AND (status <> 'pending' OR subscription_id IN (SELECT id FROM webhook_subscriptions WHERE disabled = 1))
         LIMIT ${boundLimit()})`),
    empty: db.prepare<[], bigint>(
      `SELECT NOT EXISTS (SELECT 1 FROM webhook_subscriptions) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries)
         AND NOT EXISTS (SELECT 1 FROM webhook_events)`).pluck(),
    backlog: db.prepare<[], { pending: bigint, oldest: bigint | null }>(
      `SELECT count(*) AS pending, min(d.created_at) AS oldest FROM webhook_deliveries d
       JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE d.status = 'pending' AND s.disabled = 0`)
  }
}

/** The outbox's side of the dispatcher: events become deliveries, oldest first, each body as its write made it. */
function sqliteFanOut (db: Database.Database, runBookkeeping: <T>(fn: () => T) => Promise<T>) {
  const statements = outboxStatements(db)
  const fanOut = (limit: number): number => {
    const { events, last } = statements.nextEvents.get(limit) as { events: bigint, last: bigint | null }
    if (last === null) return 0
    statements.fanOut.run(last)
    statements.deleteEvents.run(last)
    return Number(events)
  }
  return {
    statements,
    fanOut,
    fanOutAll: async (): Promise<void> => {
      while (statements.anyEvents.get() === 1n) await runBookkeeping(() => fanOut(FAN_OUT_ALL_BATCH))
    }
  }
}

/**
 * Leases due deliveries; `anyDue`: whether one was due just before (when not, events are fanned out
 * first). Subscriptions at their limit are left out in JavaScript: see
 * docs/performance.md#what-the-measurements-decided.
 */
function claimer (statements: ReturnType<typeof claimStatements>, fanOut: (limit: number) => number) {
  return (
    { lease, now, leaseMs, limit, perSubscription, skipSubscriptions, skipOwners = [] }: ClaimRequest, anyDue: boolean
  ): ClaimedDelivery[] => {
    const skip = new Set(skipSubscriptions)
    const skipOwner = new Set(skipOwners)
    // Skipped owners are filtered after the limit, so every candidate is read then.
    const candidates = skipOwner.size > 0 ? Number.MAX_SAFE_INTEGER : limit + perSubscription * skip.size
    const due = (): ClaimRow[] => statements.dueCandidates.all({ now, cap: perSubscription, limit: candidates })
      .filter((row) => !skip.has(row.subscription_id) && !skipOwner.has(row.owner))
    // Events become deliveries only when what is due falls short of the claim; the rest stays cheap
    // rows in the outbox: see docs/performance.md#what-the-measurements-decided.
    const fanOutSome = (): number => fanOut(Math.max(FAN_OUT_BATCH, limit))
    if (!anyDue) fanOutSome()
    let rows = due()
    if (anyDue && rows.length < limit && fanOutSome() > 0) rows = due()
    return rows.slice(0, limit).map((row) => {
      statements.lease.run(lease, now + leaseMs, row.id)
      return toClaimed(row, now)
    })
  }
}

/** Records an attempt if its lease still holds, and the subscription's health after it. */
function completer (db: Database.Database, changed: () => void) {
  const statements = completionStatements(db)
  return (done: DeliveryCompletion): CompletionResult => {
    const { error, body } = attemptTexts(done)
    const code = done.statusCode ?? null
    const next = done.status === 'pending' ? done.nextAttemptAt ?? done.attemptedAt : null
    const finished = statements.finish.get({
      id: done.id, lease: done.lease, status: done.status, next, at: done.attemptedAt, code, error
    })
    if (finished === undefined) return { recorded: false, subscriptionDisabled: false }
    statements.recordAttempt.run({
      id: done.id,
      at: done.attemptedAt,
      duration: Math.round(done.durationMs ?? 0),
      code,
      error,
      body
    })
    const subscriptionId = finished.subscription_id
    if (done.status === 'succeeded') {
      statements.succeeded.run(subscriptionId)
      return { recorded: true, subscriptionDisabled: false }
    }
    const health = statements.subscriptionHealth.get(subscriptionId)
    if (health === undefined) return { recorded: true, subscriptionDisabled: false }
    const disable = disablesSubscription(done, health.failing_since === null ? null : Number(health.failing_since))
    statements.failedAttempt.run({ id: subscriptionId, at: done.attemptedAt, disable: Number(disable) })
    if (disable) changed()
    return { recorded: true, subscriptionDisabled: disable && health.disabled === 0n }
  }
}

type DispatchOperations = Omit<
  WebhookStore,
  keyof ReturnType<typeof sqliteSubscriptions> | keyof ReturnType<typeof sqliteDeliveryLog> | 'listen' | 'close'
>

/** What the dispatcher asks of the store: the outbox, claims, completions, leases and upkeep. */
function sqliteDispatch (
  context: SqliteWebhookContext & { runBookkeeping: <T>(fn: () => T) => Promise<T>, changed: () => void },
  outbox: ReturnType<typeof sqliteFanOut>
): DispatchOperations {
  const { db, run, runBookkeeping, durable } = context
  const claims = claimStatements(db)
  const upkeep = upkeepStatements(db)
  const claim = claimer(claims, outbox.fanOut)
  const complete = completer(db, context.changed)
  return {
    enqueue: async (event, now) => await run(() => Number(outbox.statements.receiverCount.get({
      eventId: enqueueSqliteEvent(db, event, now), type: event.type
    }))),
    async claimDue (request) {
      const anyDue = claims.anyDue.get({ now: request.now }) === 1n
      if (!anyDue && outbox.statements.anyEvents.get() === 0n) return []
      const claimed = await runBookkeeping(() => claim(request, anyDue))
      // Nothing is sent before its event is on disk: the fanned-out events may not be flushed yet.
      return claimed.length === 0 ? claimed : await durable(claimed)
    },
    completeDelivery: async (completion) => await runBookkeeping(() => complete(completion)),
    async completeDeliveries (completions) {
      if (completions.length === 0) return []
      return await runBookkeeping(() => {
        const results = new Array<CompletionResult>(completions.length)
        // Successes first, as on PostgreSQL: a success in the batch never leaves its subscription disabled.
        for (const succeeded of [true, false]) {
          completions.forEach((done, i) => {
            if ((done.status === 'succeeded') === succeeded) results[i] = complete(done)
          })
        }
        return results
      })
    },
    async releaseDeliveries (lease, ids) {
      if (ids.length > 0) await runBookkeeping(() => claims.release.run(lease, JSON.stringify(ids.map(Number))))
    },
    async releaseOrphanedLeases () {
      if (claims.anyLeased.get() === 0n) return 0
      return await run(() => claims.releaseAll.run().changes)
    },
    async pruneDeliveries (before) {
      if (upkeep.anyPrunable.get(before) === 0n) return 0
      return await inBatches(async () => await run(() => upkeep.prune.run(before, PRUNE_BATCH).changes))
    },
    activeOwners: async () => Number(upkeep.activeOwners.get()),
    empty: async () => upkeep.empty.get() === 1n,
    async backlog (): Promise<Backlog> {
      const deliveries = upkeep.backlog.get() as { pending: bigint, oldest: bigint | null }
      const events = outbox.statements.eventBacklog.get() as { pending: bigint, oldest: bigint | null }
      const oldest = [deliveries.oldest, events.oldest].filter((at) => at !== null).map(Number)
      return {
        pending: Number(deliveries.pending + events.pending),
        oldestCreatedAt: oldest.length === 0 ? undefined : Math.min(...oldest)
      }
    }
  }
}

export function createSqliteWebhookStore (options: SqliteWebhookStoreOptions): WebhookStore {
  const { db } = options
  checkSchema(db)
  const write: SqliteWriteRunner = options.write ?? (async (transaction) => transaction.immediate())
  const run = async <T>(fn: () => T): Promise<T> => await write(db.transaction(fn))
  // The dispatcher's bookkeeping is not waited for on disk: a crash can only make a delivery go again.
  const runBookkeeping = async <T>(fn: () => T): Promise<T> => await write(db.transaction(fn), { awaitSync: false })
  const changed = options.onSubscriptionsChanged ?? (() => {})
  const runChange = async <T>(fn: () => T): Promise<T> => await run(() => {
    changed()
    return fn()
  })
  const context: SqliteWebhookContext = {
    db, run, runChange, durable: options.afterDurable ?? (<T>(value: T): T => value)
  }
  const outbox = sqliteFanOut(db, runBookkeeping)
  return {
    ...sqliteSubscriptions(context),
    ...sqliteDeliveryLog(context, outbox.fanOutAll),
    ...sqliteDispatch({ ...context, runBookkeeping, changed }, outbox),
    ...(options.listen !== undefined && { listen: options.listen }),
    async close () {
      if (options.ownsDb === true && db.open) db.close()
    }
  }
}
