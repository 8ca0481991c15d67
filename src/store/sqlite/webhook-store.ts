import Database from 'better-sqlite3'
import type { Plant } from '../../schemas/plant.js'
import { eventPayload, newMessageId, type PlantEvent, type WebhookEventType } from '../../webhooks/events.js'
import {
  afterRotation, toClaimed, toDelivery, toDeliveryDetail, toSubscription, truncateError, type AttemptRow, type ClaimRow,
  type DeliveryDetailRow, type DeliveryRow, type SubscriptionRow
} from '../../webhooks/rows.js'
import type {
  Backlog, ClaimedDelivery, ClaimRequest, CompletionResult, DeliveryCompletion, DeliveryPage, DeliveryQuery,
  NewSubscriptionRecord, RetryResult, SubscriptionChanges, SubscriptionPage, SubscriptionQuery,
  WebhookStore, WebhookSubscription
} from '../../webhooks/store.js'
import { StoreOpenError, subscriptionLimit } from '../../errors.js'
import { boundLimit, configureConnection } from './connection.js'

/** The migration step (see migrations.ts) that completed the webhook tables (the event outbox). */
export const WEBHOOK_SCHEMA_VERSION = 9

/** Runs a write transaction; `awaitSync: false` answers once committed, without waiting for the flush. */
export type SqliteWriteRunner = <T>(transaction: Database.Transaction<() => T>, options?: { awaitSync?: boolean }) => Promise<T>

export interface SqliteWebhookStoreOptions {
  /** Opened with `defaultSafeIntegers(true)`: the plant store's own connection, or one on the same file. */
  db: Database.Database
  write?: SqliteWriteRunner
  /** Holds a read's answer until what is committed is durable, so no answer shows a write that could be lost. */
  afterDurable?: <T>(value: T) => T | Promise<T>
  ownsDb?: boolean
  listen?: WebhookStore['listen']
  /** Called inside the write's transaction when subscriptions change: the plant store then re-checks whether any is enabled. */
  onSubscriptionsChanged?: () => void
}

interface SqliteSubscriptionRow {
  id: bigint
  owner: string
  url: string
  events: string
  description: string | null
  disabled: bigint
  secret: string
  previous_secrets: string
  failing_since: bigint | null
  created_at: bigint
  updated_at: bigint
}

const MAX_ID = 9223372036854775807n
/** Prune in slices: one long DELETE would hold the write lock (and the plant writes) up. */
const PRUNE_BATCH = 1000

const normalize = (row: SqliteSubscriptionRow): SubscriptionRow => ({
  ...row,
  events: row.events.split(' ').filter((name) => name !== ''),
  disabled: row.disabled === 1n
})

const subscription = (row: SqliteSubscriptionRow): WebhookSubscription => toSubscription(normalize(row))

const DELIVERY = 'id, event_type, status, attempts, last_attempt_at, last_status_code, last_error, next_attempt_at, created_at'

const receives = (eventId: string, type: string): string =>
  `s.disabled = 0 AND s.first_event_id <= ${eventId} AND instr(' ' || s.events || ' ', ' ' || ${type} || ' ') > 0`

interface EventRow {
  id: bigint
  message_id: string
  event_type: string
  plant_id: bigint
  name: string
  tag: string | null
  plant_created_at: string
  plant_updated_at: string
  occurred_at: bigint
  created_at: bigint
  request_id: string | null
  traceparent: string | null
}

type EventValues = [string, string, bigint, string, string | null, string, string, number, number, string | null, string | null]

const INSERT_EVENT_SQL = `
  INSERT INTO webhook_events (message_id, event_type, plant_id, name, tag, plant_created_at, plant_updated_at, occurred_at, created_at, request_id, traceparent)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const eventStatements = new WeakMap<Database.Database, Database.Statement<EventValues>>()

/**
 * Writes the event to the outbox inside the plant write's own transaction, so the change and its
 * event commit (or roll back) together. The body is made when the dispatcher fans the event out.
 */
export function enqueueSqliteEvent (db: Database.Database, event: PlantEvent, now: number = Date.now()): bigint {
  let statement = eventStatements.get(db)
  if (statement === undefined) {
    statement = db.prepare<EventValues>(INSERT_EVENT_SQL)
    eventStatements.set(db, statement)
  }
  const { plant, origin } = event
  return statement.run(newMessageId(), event.type, plant.id, plant.name, plant.tag ?? null, plant.createdAt, plant.updatedAt,
    event.occurredAt ?? now, now, origin?.requestId ?? null, origin?.traceparent ?? null).lastInsertRowid as bigint
}

const FAN_OUT_BATCH = 64
const FAN_OUT_ALL_BATCH = 1000

/** A connection of its own to a database the plant store has already migrated. */
export function openSqliteWebhookDatabase (filename: string): Database.Database {
  return configureConnection(new Database(filename, { fileMustExist: filename !== ':memory:' }))
}

function checkSchema (db: Database.Database): void {
  const version = Number(db.pragma('user_version', { simple: true }))
  if (version < WEBHOOK_SCHEMA_VERSION) {
    throw new StoreOpenError(`the database schema (version ${version}) has no webhook tables yet: open the plant store on it first`)
  }
}

export function createSqliteWebhookStore (options: SqliteWebhookStoreOptions): WebhookStore {
  const { db } = options
  checkSchema(db)
  const write: SqliteWriteRunner = options.write ?? (async (transaction) => transaction.immediate())
  const durable = options.afterDurable ?? (<T>(value: T): T => value)

  const statements = {
    insertSubscription: db.prepare<[string, string, string, string | null, number, string, number, number], SqliteSubscriptionRow>(
      `INSERT INTO webhook_subscriptions (owner, url, events, description, disabled, secret, created_at, updated_at, first_event_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM sqlite_sequence WHERE name = 'webhook_events'))
       RETURNING *`),
    activeOwners: db.prepare<[], bigint>('SELECT count(DISTINCT owner) FROM webhook_subscriptions WHERE disabled = 0').pluck(),
    countSubscriptions: db.prepare<[string], bigint>('SELECT count(*) FROM webhook_subscriptions WHERE owner = ?').pluck(),
    getSubscription: db.prepare<[string, bigint], SqliteSubscriptionRow>('SELECT * FROM webhook_subscriptions WHERE owner = ? AND id = ?'),
    listSubscriptions: db.prepare<[string, bigint, number], SqliteSubscriptionRow>(
      `SELECT * FROM webhook_subscriptions WHERE owner = ? AND id > ? ORDER BY id LIMIT ${boundLimit()}`),
    // updated_at strictly increases, even for two changes within one millisecond (as for plants).
    updateSubscription: db.prepare<[{ owner: string, id: bigint, url: string, events: string, description: string | null, disabled: number, reset: number, now: number }], SqliteSubscriptionRow>(
      `UPDATE webhook_subscriptions SET url = @url, events = @events, description = @description, disabled = @disabled,
         failing_since = CASE WHEN @reset THEN NULL ELSE failing_since END, updated_at = max(@now, updated_at + 1)
       WHERE owner = @owner AND id = @id RETURNING *`),
    rotateSecret: db.prepare<[{ owner: string, id: bigint, secret: string, previous: string, now: number }], SqliteSubscriptionRow>(
      `UPDATE webhook_subscriptions SET previous_secrets = @previous, secret = @secret, updated_at = max(@now, updated_at + 1)
       WHERE owner = @owner AND id = @id RETURNING *`),
    deleteDeliveriesOf: db.prepare<[bigint], unknown>('DELETE FROM webhook_deliveries WHERE subscription_id = ?'),
    deleteSubscription: db.prepare<[string, bigint], unknown>('DELETE FROM webhook_subscriptions WHERE owner = ? AND id = ?'),
    listDeliveries: db.prepare<[{ subscription: bigint, before: bigint, status: string | null, type: string | null, limit: number }], DeliveryRow>(
      `SELECT ${DELIVERY} FROM webhook_deliveries
       WHERE subscription_id = @subscription AND id < @before AND (@status IS NULL OR status = @status) AND (@type IS NULL OR event_type = @type)
       ORDER BY id DESC LIMIT ${boundLimit('limit')}`),
    getDelivery: db.prepare<[string, bigint, bigint], DeliveryDetailRow>(
      `SELECT ${DELIVERY.split(', ').map((column) => `d.${column}`).join(', ')}, d.message_id, d.payload
       FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
       WHERE s.owner = ? AND s.id = ? AND d.id = ?`),
    attemptsOf: db.prepare<[bigint], AttemptRow>(
      'SELECT at, duration_ms, status_code, error, response_body FROM webhook_attempts WHERE delivery_id = ? ORDER BY id'),
    recordAttempt: db.prepare<[{ id: bigint, at: number, duration: number, code: number | null, error: string | null, body: string | null }], unknown>(
      `INSERT INTO webhook_attempts (delivery_id, at, duration_ms, status_code, error, response_body)
       VALUES (@id, @at, @duration, @code, @error, @body)`),
    findDelivery: db.prepare<[string, bigint, bigint], { disabled: bigint }>(
      `SELECT s.disabled FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
       WHERE s.owner = ? AND s.id = ? AND d.id = ?`),
    recover: db.prepare<[number, bigint, number], unknown>(
      'UPDATE webhook_deliveries SET status = \'pending\', next_attempt_at = ? WHERE subscription_id = ? AND status = \'failed\' AND created_at >= ?'),
    retryDelivery: db.prepare<[number, bigint], DeliveryRow>(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ? WHERE id = ? RETURNING ${DELIVERY}`),
    receiverCount: db.prepare<[{ eventId: bigint, type: string }], bigint>(
      `SELECT count(*) FROM webhook_subscriptions s WHERE ${receives('@eventId', '@type')}`).pluck(),
    anyEvents: db.prepare<[], bigint>('SELECT EXISTS (SELECT 1 FROM webhook_events)').pluck(),
    nextEvents: db.prepare<[number], EventRow>(`SELECT * FROM webhook_events ORDER BY id LIMIT ${boundLimit()}`),
    fanOut: db.prepare<[{ eventId: bigint, messageId: string, type: string, payload: string, createdAt: bigint, requestId: string | null, traceparent: string | null }], unknown>(
      `INSERT INTO webhook_deliveries (subscription_id, message_id, event_type, payload, status, attempts, next_attempt_at, created_at, request_id, traceparent)
       SELECT s.id, @messageId, @type, @payload, 'pending', 0, @createdAt, @createdAt, @requestId, @traceparent
       FROM webhook_subscriptions s WHERE ${receives('@eventId', '@type')}`),
    deleteEvents: db.prepare<[bigint], unknown>('DELETE FROM webhook_events WHERE id <= ?'),
    eventBacklog: db.prepare<[], { pending: bigint, oldest: bigint | null }>(
      `SELECT count(*) AS pending, min(e.created_at) AS oldest
       FROM webhook_events e JOIN webhook_subscriptions s ON ${receives('e.id', 'e.event_type')}`),
    dueCandidates: db.prepare<[{ now: number, limit: number, cap: number }], ClaimRow>(
      `SELECT id, subscription_id, owner, message_id, event_type, payload, attempts, url, secret, previous_secrets, request_id, traceparent
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
    lease: db.prepare<[string, number, bigint], unknown>('UPDATE webhook_deliveries SET lease = ?, lease_until = ? WHERE id = ?'),
    // Reads first: an idle service must not pay a write transaction (and an fdatasync) every poll.
    anyDue: db.prepare<[{ now: number }], bigint>(
      `SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= @now
                      AND (lease_until IS NULL OR lease_until <= @now))`).pluck(),
    anyLeased: db.prepare<[], bigint>('SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE lease IS NOT NULL)').pluck(),
    anyPrunable: db.prepare<[number], bigint>('SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE created_at < ?)').pluck(),
    finish: db.prepare<[{ id: bigint, lease: string, status: string, next: number | null, at: number, code: number | null, error: string | null }], { subscription_id: bigint }>(
      `UPDATE webhook_deliveries SET status = @status, attempts = attempts + 1, next_attempt_at = @next,
         lease = NULL, lease_until = NULL, last_attempt_at = @at, last_status_code = @code, last_error = @error
       WHERE id = @id AND lease = @lease RETURNING subscription_id`),
    subscriptionHealth: db.prepare<[bigint], { disabled: bigint, failing_since: bigint | null }>(
      'SELECT disabled, failing_since FROM webhook_subscriptions WHERE id = ?'),
    succeeded: db.prepare<[bigint], unknown>(
      'UPDATE webhook_subscriptions SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL'),
    failedAttempt: db.prepare<[{ id: bigint, at: number, disable: number }], unknown>(
      `UPDATE webhook_subscriptions SET failing_since = coalesce(failing_since, @at),
         disabled = CASE WHEN @disable THEN 1 ELSE disabled END,
         updated_at = CASE WHEN @disable AND disabled = 0 THEN max(@at, updated_at + 1) ELSE updated_at END
       WHERE id = @id`),
    releaseAll: db.prepare<[], unknown>('UPDATE webhook_deliveries SET lease = NULL, lease_until = NULL WHERE lease IS NOT NULL'),
    release: db.prepare<[string, string], unknown>(
      'UPDATE webhook_deliveries SET lease = NULL, lease_until = NULL WHERE lease = ? AND id IN (SELECT value FROM json_each(?))'),
    backlog: db.prepare<[], { pending: bigint, oldest: bigint | null }>(
      `SELECT count(*) AS pending, min(d.created_at) AS oldest FROM webhook_deliveries d
       JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE d.status = 'pending' AND s.disabled = 0`),
    prune: db.prepare<[number, number], unknown>(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries
         WHERE created_at < ? AND (status <> 'pending' OR subscription_id IN (SELECT id FROM webhook_subscriptions WHERE disabled = 1))
         LIMIT ${boundLimit()})`)
  }

  const run = async <T>(fn: () => T): Promise<T> => await write(db.transaction(fn))
  // The dispatcher's bookkeeping is not waited for on disk: a crash can only make a delivery go again.
  const runBookkeeping = async <T>(fn: () => T): Promise<T> => await write(db.transaction(fn), { awaitSync: false })
  const changed = options.onSubscriptionsChanged ?? (() => {})
  const runChange = async <T>(fn: () => T): Promise<T> => await run(() => {
    changed()
    return fn()
  })

  const update = (owner: string, id: bigint, changes: SubscriptionChanges, now: number): WebhookSubscription | undefined => {
    const row = statements.getSubscription.get(owner, id)
    if (row === undefined) return undefined
    const url = changes.url ?? row.url
    const disabled = changes.disabled ?? row.disabled === 1n
    // Failures before a new URL or a re-enable say nothing about what comes next.
    const reset = url !== row.url || (row.disabled === 1n && !disabled)
    const events = changes.events === undefined ? row.events : changes.events.join(' ')
    const description = changes.description === undefined ? row.description : changes.description
    const updated = statements.updateSubscription.get({ owner, id, url, events, description, disabled: Number(disabled), reset: Number(reset), now })
    return updated === undefined ? undefined : subscription(updated)
  }

  const remove = (owner: string, id: bigint): boolean => {
    if (statements.getSubscription.get(owner, id) === undefined) return false
    // Explicitly as well as by the foreign key: a connection without foreign_keys=ON leaves none behind.
    statements.deleteDeliveriesOf.run(id)
    statements.deleteSubscription.run(owner, id)
    return true
  }

  const retry = (owner: string, subscriptionId: bigint, deliveryId: bigint, now: number): RetryResult => {
    const found = statements.findDelivery.get(owner, subscriptionId, deliveryId)
    if (found === undefined) return { status: 'not-found' }
    if (found.disabled === 1n) return { status: 'subscription-disabled' }
    return { status: 'ok', delivery: toDelivery(statements.retryDelivery.get(now, deliveryId) as DeliveryRow) }
  }

  /** Each body is made here, from the plant's fields as the event recorded them: the same bytes every time. */
  const fanOut = (limit: number): number => {
    const events = statements.nextEvents.all(limit)
    for (const event of events) {
      const type = event.event_type as WebhookEventType
      const plant: Plant = {
        id: event.plant_id,
        name: event.name,
        ...(event.tag !== null && { tag: event.tag }),
        createdAt: event.plant_created_at,
        updatedAt: event.plant_updated_at
      }
      statements.fanOut.run({
        eventId: event.id,
        messageId: event.message_id,
        type,
        payload: eventPayload(type, plant, Number(event.occurred_at)),
        createdAt: event.created_at,
        requestId: event.request_id,
        traceparent: event.traceparent
      })
    }
    const last = events.at(-1)
    if (last !== undefined) statements.deleteEvents.run(last.id)
    return events.length
  }

  const fanOutAll = async (): Promise<void> => {
    while (statements.anyEvents.get() === 1n) await runBookkeeping(() => fanOut(FAN_OUT_ALL_BATCH))
  }

  // Per subscription its oldest due deliveries, round robin between owners, then an owner's
  // subscriptions. CROSS JOIN keeps subscriptions the outer loop: index probes, not a scan.
  // Subscriptions at their limit are left out in JavaScript: see docs/performance.md#what-the-measurements-decided.
  /** `anyDue`: whether a delivery was due just before (when not, events are fanned out first). */
  const claim = ({ lease, now, leaseMs, limit, perSubscription, skipSubscriptions, skipOwners = [] }: ClaimRequest, anyDue: boolean): ClaimedDelivery[] => {
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

  const complete = (done: DeliveryCompletion): CompletionResult => {
    const finished = statements.finish.get({
      id: done.id,
      lease: done.lease,
      status: done.status,
      next: done.status === 'pending' ? done.nextAttemptAt ?? done.attemptedAt : null,
      at: done.attemptedAt,
      code: done.statusCode ?? null,
      error: done.error === undefined ? null : truncateError(done.error)
    })
    if (finished === undefined) return { recorded: false, subscriptionDisabled: false }
    statements.recordAttempt.run({
      id: done.id,
      at: done.attemptedAt,
      duration: Math.round(done.durationMs ?? 0),
      code: done.statusCode ?? null,
      error: done.error === undefined ? null : truncateError(done.error),
      body: done.responseBody ?? null
    })
    const subscriptionId = finished.subscription_id
    if (done.status === 'succeeded') {
      statements.succeeded.run(subscriptionId)
      return { recorded: true, subscriptionDisabled: false }
    }
    const health = statements.subscriptionHealth.get(subscriptionId)
    if (health === undefined) return { recorded: true, subscriptionDisabled: false }
    const failingSince = health.failing_since === null ? done.attemptedAt : Number(health.failing_since)
    const disable = done.disableSubscription || failingSince <= done.failingDisableBefore
    statements.failedAttempt.run({ id: subscriptionId, at: done.attemptedAt, disable: Number(disable) })
    if (disable) changed()
    return { recorded: true, subscriptionDisabled: disable && health.disabled === 0n }
  }

  return {
    async createSubscription (record: NewSubscriptionRecord, now: number, maxPerOwner?: number) {
      const { owner, url, events, description, disabled, secret } = record
      const row = await runChange(() => {
        if (maxPerOwner !== undefined && Number(statements.countSubscriptions.get(owner)) >= maxPerOwner) throw subscriptionLimit(maxPerOwner)
        return statements.insertSubscription.get(owner, url, events.join(' '), description ?? null, Number(disabled), secret, now, now) as SqliteSubscriptionRow
      })
      return subscription(row)
    },

    async listSubscriptions (owner: string, { limit, after }: SubscriptionQuery): Promise<SubscriptionPage> {
      const rows = statements.listSubscriptions.all(owner, after ?? 0n, limit + 1)
      return await durable({ subscriptions: rows.slice(0, limit).map(subscription), hasMore: rows.length > limit })
    },

    async getSubscription (owner: string, id: bigint) {
      const row = statements.getSubscription.get(owner, id)
      return await durable(row === undefined ? undefined : subscription(row))
    },

    async updateSubscription (owner: string, id: bigint, changes: SubscriptionChanges, now: number) {
      return await runChange(() => update(owner, id, changes, now))
    },

    async deleteSubscription (owner: string, id: bigint) {
      return await runChange(() => remove(owner, id))
    },

    async rotateSecret (owner: string, id: bigint, secret: string, previousUntil: number, now: number) {
      const row = await run(() => {
        const current = statements.getSubscription.get(owner, id)
        if (current === undefined) return undefined
        const previous = afterRotation(current.secret, previousUntil, current.previous_secrets, now)
        return statements.rotateSecret.get({ owner, id, secret, previous, now })
      })
      return row === undefined ? undefined : subscription(row)
    },

    async listDeliveries (owner: string, subscriptionId: bigint, { limit, before, status, eventType }: DeliveryQuery): Promise<DeliveryPage | undefined> {
      if (statements.getSubscription.get(owner, subscriptionId) === undefined) return await durable(undefined)
      await fanOutAll()
      const rows = statements.listDeliveries.all({
        subscription: subscriptionId, before: before ?? MAX_ID, status: status ?? null, type: eventType ?? null, limit: limit + 1
      })
      return await durable({ deliveries: rows.slice(0, limit).map(toDelivery), hasMore: rows.length > limit })
    },

    async getDelivery (owner: string, subscriptionId: bigint, deliveryId: bigint) {
      const row = statements.getDelivery.get(owner, subscriptionId, deliveryId)
      return await durable(row === undefined ? undefined : toDeliveryDetail(row, statements.attemptsOf.all(deliveryId)))
    },

    async recoverDeliveries (owner: string, subscriptionId: bigint, since: number, now: number) {
      return await run(() => statements.getSubscription.get(owner, subscriptionId) === undefined
        ? undefined
        : statements.recover.run(now, subscriptionId, since).changes)
    },

    async retryDelivery (owner: string, subscriptionId: bigint, deliveryId: bigint, now: number) {
      return await run(() => retry(owner, subscriptionId, deliveryId, now))
    },

    async enqueue (event: PlantEvent, now: number) {
      return await run(() => Number(statements.receiverCount.get({ eventId: enqueueSqliteEvent(db, event, now), type: event.type })))
    },

    async claimDue (request: ClaimRequest) {
      const anyDue = statements.anyDue.get({ now: request.now }) === 1n
      if (!anyDue && statements.anyEvents.get() === 0n) return []
      const claimed = await runBookkeeping(() => claim(request, anyDue))
      // Nothing is sent before its event is on disk: the fanned-out events may not be flushed yet.
      return claimed.length === 0 ? claimed : await durable(claimed)
    },

    async completeDelivery (completion: DeliveryCompletion) {
      return await runBookkeeping(() => complete(completion))
    },

    async completeDeliveries (completions: readonly DeliveryCompletion[]) {
      if (completions.length === 0) return []
      return await runBookkeeping(() => {
        const results = new Array<CompletionResult>(completions.length)
        // Successes first, as on PostgreSQL: a success in the batch never leaves its subscription disabled.
        for (const succeeded of [true, false]) {
          completions.forEach((done, i) => { if ((done.status === 'succeeded') === succeeded) results[i] = complete(done) })
        }
        return results
      })
    },

    async releaseDeliveries (lease: string, ids: readonly bigint[]) {
      if (ids.length > 0) await runBookkeeping(() => statements.release.run(lease, JSON.stringify(ids.map(Number))))
    },

    async releaseOrphanedLeases () {
      if (statements.anyLeased.get() === 0n) return 0
      return await run(() => statements.releaseAll.run().changes)
    },

    async pruneDeliveries (before: number) {
      if (statements.anyPrunable.get(before) === 0n) return 0
      let total = 0
      for (;;) {
        const deleted = await run(() => statements.prune.run(before, PRUNE_BATCH).changes)
        total += deleted
        if (deleted < PRUNE_BATCH) return total
      }
    },

    ...(options.listen !== undefined && { listen: options.listen }),

    async activeOwners () {
      return Number(statements.activeOwners.get())
    },

    async backlog (): Promise<Backlog> {
      const deliveries = statements.backlog.get() as { pending: bigint, oldest: bigint | null }
      const events = statements.eventBacklog.get() as { pending: bigint, oldest: bigint | null }
      const oldest = [deliveries.oldest, events.oldest].filter((at) => at !== null).map(Number)
      return { pending: Number(deliveries.pending + events.pending), oldestCreatedAt: oldest.length === 0 ? undefined : Math.min(...oldest) }
    },

    async close () {
      if (options.ownsDb === true && db.open) db.close()
    }
  }
}
