import type Database from 'better-sqlite3'
import { subscriptionLimit } from '../../lib/errors.js'
import {
  activeSecrets, afterRotation, toDelivery, toDeliveryDetail, toSubscription, type AttemptRow, type DeliveryDetailRow,
  type DeliveryRow, type SubscriptionRow
} from '../../webhooks/rows.js'
import type {
  RetryResult, SubscriptionChanges, WebhookStore, WebhookSubscription
} from '../../webhooks/store-contract.js'
import { DELIVERY_COLUMNS, MAX_ID } from '../webhook-rules.js'
import { boundLimit } from './connection.js'

/** What the webhook repository's parts share: its connection and how it writes and reads. */
export interface SqliteWebhookContext {
  db: Database.Database
  /** A write transaction through the store's group commit. */
  run: <T>(fn: () => T) => Promise<T>
  /** A write that changes subscriptions: the outbox re-reads which event types are wanted. */
  runChange: <T>(fn: () => T) => Promise<T>
  durable: <T>(value: T) => T | Promise<T>
}

export interface SqliteSubscriptionRow {
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

const normalize = (row: SqliteSubscriptionRow): SubscriptionRow => ({
  ...row,
  events: row.events.split(' ').filter((name) => name !== ''),
  disabled: row.disabled === 1n
})

const subscription = (row: SqliteSubscriptionRow): WebhookSubscription => toSubscription(normalize(row))

type UpdateValues = {
  owner: string,
  id: bigint,
  url: string,
  events: string,
  description: string | null,
  disabled: number,
  reset: number,
  now: number
}

function subscriptionStatements (db: Database.Database) {
  return {
    insert: db.prepare<[string, string, string, string | null, number, string, number, number], SqliteSubscriptionRow>(
      `INSERT INTO webhook_subscriptions
         (owner, url, events, description, disabled, secret, created_at, updated_at, first_event_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?,
         (SELECT coalesce(max(seq), 0) + 1 FROM sqlite_sequence WHERE name = 'webhook_events'))
       RETURNING *`),
    count: db.prepare<[string], bigint>('SELECT count(*) FROM webhook_subscriptions WHERE owner = ?').pluck(),
    get: db.prepare<[string, bigint], SqliteSubscriptionRow>(
      'SELECT * FROM webhook_subscriptions WHERE owner = ? AND id = ?'),
    list: db.prepare<[string, bigint, number], SqliteSubscriptionRow>(
      `SELECT * FROM webhook_subscriptions WHERE owner = ? AND id > ? ORDER BY id LIMIT ${boundLimit()}`),
    // updated_at strictly increases, even for two changes within one millisecond (as for plants).
    update: db.prepare<[UpdateValues], SqliteSubscriptionRow>(
      `UPDATE webhook_subscriptions SET url = @url, events = @events, description = @description, disabled = @disabled,
         failing_since = CASE WHEN @reset THEN NULL ELSE failing_since END, updated_at = max(@now, updated_at + 1)
       WHERE owner = @owner AND id = @id RETURNING *`),
    rotateSecret: db.prepare<
      [{ owner: string, id: bigint, secret: string, previous: string, now: number }], SqliteSubscriptionRow
    >(
      `UPDATE webhook_subscriptions
       SET previous_secrets = @previous, secret = @secret, updated_at = max(@now, updated_at + 1)
       WHERE owner = @owner AND id = @id RETURNING *`),
    deleteDeliveriesOf: db.prepare<[bigint], unknown>('DELETE FROM webhook_deliveries WHERE subscription_id = ?'),
    delete: db.prepare<[string, bigint], unknown>('DELETE FROM webhook_subscriptions WHERE owner = ? AND id = ?')
  }
}

/** A merge patch of a subscription; a new URL or a re-enable forgets past failures. */
function updater (statements: ReturnType<typeof subscriptionStatements>) {
  return (owner: string, id: bigint, changes: SubscriptionChanges, now: number): WebhookSubscription | undefined => {
    const row = statements.get.get(owner, id)
    if (row === undefined) return undefined
    const url = changes.url ?? row.url
    const disabled = changes.disabled ?? row.disabled === 1n
    const reset = url !== row.url || (row.disabled === 1n && !disabled)
    const events = changes.events === undefined ? row.events : changes.events.join(' ')
    const description = changes.description === undefined ? row.description : changes.description
    const updated = statements.update.get({
      owner, id, url, events, description, disabled: Number(disabled), reset: Number(reset), now
    })
    return updated === undefined ? undefined : subscription(updated)
  }
}

type SubscriptionOperations = Pick<WebhookStore, 'createSubscription' | 'listSubscriptions' | 'getSubscription' |
  'updateSubscription' | 'deleteSubscription' | 'rotateSecret' | 'signingTarget'>

/** Subscriptions, each scoped by its owner. */
export function sqliteSubscriptions ({ db, run, runChange, durable }: SqliteWebhookContext): SubscriptionOperations {
  const statements = subscriptionStatements(db)
  const update = updater(statements)
  return {
    async createSubscription ({ owner, url, events, description, disabled, secret }, now, maxPerOwner) {
      return subscription(await runChange(() => {
        if (maxPerOwner !== undefined && Number(statements.count.get(owner)) >= maxPerOwner) {
          throw subscriptionLimit(maxPerOwner)
        }
        return statements.insert.get(
          owner, url, events.join(' '), description ?? null, Number(disabled), secret, now, now
        ) as SqliteSubscriptionRow
      }))
    },
    async listSubscriptions (owner, { limit, after }) {
      const rows = statements.list.all(owner, after ?? 0n, limit + 1)
      return await durable({ subscriptions: rows.slice(0, limit).map(subscription), hasMore: rows.length > limit })
    },
    async getSubscription (owner, id) {
      const row = statements.get.get(owner, id)
      return await durable(row === undefined ? undefined : subscription(row))
    },
    async signingTarget (owner, id, now) {
      const row = statements.get.get(owner, id)
      return await durable(row === undefined
        ? undefined
        : { url: row.url, secrets: activeSecrets(row.secret, row.previous_secrets, now) })
    },
    updateSubscription: async (owner, id, changes, now) => await runChange(() => update(owner, id, changes, now)),
    async deleteSubscription (owner, id) {
      return await runChange(() => {
        if (statements.get.get(owner, id) === undefined) return false
        // Explicitly as well as by the foreign key: a connection without foreign_keys=ON leaves none behind.
        statements.deleteDeliveriesOf.run(id)
        statements.delete.run(owner, id)
        return true
      })
    },
    async rotateSecret (owner, id, secret, previousUntil, now) {
      const row = await run(() => {
        const current = statements.get.get(owner, id)
        if (current === undefined) return undefined
        const previous = afterRotation(current.secret, previousUntil, current.previous_secrets, now)
        return statements.rotateSecret.get({ owner, id, secret, previous, now })
      })
      return row === undefined ? undefined : subscription(row)
    }
  }
}

function deliveryStatements (db: Database.Database) {
  return {
    owned: db.prepare<[string, bigint], bigint>(
      'SELECT id FROM webhook_subscriptions WHERE owner = ? AND id = ?').pluck(),
    list: db.prepare<
      [{ subscription: bigint, before: bigint, status: string | null, type: string | null, limit: number }], DeliveryRow
    >(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
       WHERE subscription_id = @subscription AND id < @before AND (@status IS NULL OR status = @status)
         AND (@type IS NULL OR event_type = @type)
       ORDER BY id DESC LIMIT ${boundLimit('limit')}`),
    get: db.prepare<[string, bigint, bigint], DeliveryDetailRow>(
      `SELECT ${DELIVERY_COLUMNS.split(', ').map((column) => `d.${column}`).join(', ')}, d.message_id, d.payload
       FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
       WHERE s.owner = ? AND s.id = ? AND d.id = ?`),
    attemptsOf: db.prepare<[bigint], AttemptRow>(
      'SELECT at, duration_ms, status_code, error, response_body FROM webhook_attempts ' +
      'WHERE delivery_id = ? ORDER BY id'),
    find: db.prepare<[string, bigint, bigint], { disabled: bigint }>(
      `SELECT s.disabled FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
       WHERE s.owner = ? AND s.id = ? AND d.id = ?`),
    recover: db.prepare<[number, bigint, number], unknown>(
      'UPDATE webhook_deliveries SET status = \'pending\', next_attempt_at = ? ' +
      'WHERE subscription_id = ? AND status = \'failed\' AND created_at >= ?'),
    retry: db.prepare<[number, bigint], DeliveryRow>(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?
       WHERE id = ? RETURNING ${DELIVERY_COLUMNS}`)
  }
}

type DeliveryLogOperations =
  Pick<WebhookStore, 'listDeliveries' | 'getDelivery' | 'recoverDeliveries' | 'retryDelivery'>

/**
 * A subscription's deliveries as its owner inspects and re-queues them; `fanOutAll` first makes every waiting event a
 * delivery.
 */
export function sqliteDeliveryLog (
  { db, run, durable }: SqliteWebhookContext, fanOutAll: () => Promise<void>
): DeliveryLogOperations {
  const statements = deliveryStatements(db)
  const retry = (owner: string, subscriptionId: bigint, deliveryId: bigint, now: number): RetryResult => {
    const found = statements.find.get(owner, subscriptionId, deliveryId)
    if (found === undefined) return { status: 'not-found' }
    if (found.disabled === 1n) return { status: 'subscription-disabled' }
    return { status: 'ok', delivery: toDelivery(statements.retry.get(now, deliveryId) as DeliveryRow) }
  }
  return {
    async listDeliveries (owner, subscriptionId, { limit, before, status, eventType }) {
      if (statements.owned.get(owner, subscriptionId) === undefined) return await durable(undefined)
      await fanOutAll()
      const rows = statements.list.all({
        subscription: subscriptionId,
        before: before ?? MAX_ID,
        status: status ?? null,
        type: eventType ?? null,
        limit: limit + 1
      })
      return await durable({ deliveries: rows.slice(0, limit).map(toDelivery), hasMore: rows.length > limit })
    },
    async getDelivery (owner, subscriptionId, deliveryId) {
      const row = statements.get.get(owner, subscriptionId, deliveryId)
      return await durable(row === undefined ? undefined : toDeliveryDetail(row, statements.attemptsOf.all(deliveryId)))
    },
    async recoverDeliveries (owner, subscriptionId, since, now) {
      return await run(() => statements.owned.get(owner, subscriptionId) === undefined
        ? undefined
        : statements.recover.run(now, subscriptionId, since).changes)
    },
    retryDelivery: async (owner, subscriptionId, deliveryId, now) =>
      await run(() => retry(owner, subscriptionId, deliveryId, now))
  }
}
