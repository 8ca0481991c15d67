import type pg from 'pg'
import { subscriptionLimit } from '../../lib/errors.js'
import {
  activeSecrets, afterRotation, toDelivery, toDeliveryDetail, toSubscription, type AttemptRow, type DeliveryDetailRow,
  type DeliveryRow, type SubscriptionRow
} from '../../webhooks/rows.js'
import type { WebhookStore, WebhookSubscription } from '../../webhooks/store-contract.js'
import { DELIVERY_COLUMNS, MAX_ID } from '../webhook-rules.js'
import { inTransaction, statementRunner, tablePrefix, type RunStatement } from './connection.js'

type Queryable = pg.Pool | pg.PoolClient

interface PgSubscriptionRow extends SubscriptionRow {
  events: string[]
}

/** Named columns, never `*`: a later migration's column never reaches an older instance's rows. */
const SUBSCRIPTION = 'id, url, events, description, disabled, secret, created_at, updated_at'

/** The subscriptions' statements on `schema`'s tables, each schema-qualified. */
const statements = (schema: string | undefined) => {
  const t = tablePrefix(schema)
  return {
    // A subscription receives the events numbered after the last one handed out when it was created.
    insert: `INSERT INTO ${t}webhook_subscriptions
               (owner, url, events, description, disabled, secret, created_at, updated_at, first_event_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7,
                     (SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END
                      FROM ${t}webhook_events_id_seq))
             RETURNING ${SUBSCRIPTION}`,
    // Creates for one owner queue behind each other until commit, so the count below holds.
    lockOwner: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 33))',
    count: `SELECT count(*)::integer AS n FROM ${t}webhook_subscriptions WHERE owner = $1`,
    get: `SELECT ${SUBSCRIPTION} FROM ${t}webhook_subscriptions WHERE owner = $1 AND id = $2`,
    list: `SELECT ${SUBSCRIPTION} FROM ${t}webhook_subscriptions WHERE owner = $1 AND id > $2 ORDER BY id LIMIT $3`,
    // A new URL or a re-enable forgets past failures. updated_at strictly increases, as for plants.
    update: `UPDATE ${t}webhook_subscriptions SET
               url = coalesce($3, url), events = coalesce($4, events),
               description = CASE WHEN $5::boolean THEN $6 ELSE description END,
               disabled = coalesce($7, disabled),
               failing_since = CASE WHEN coalesce($3, url) <> url OR (disabled AND NOT coalesce($7, disabled))
                                    THEN NULL ELSE failing_since END,
               updated_at = greatest($8, updated_at + 1)
             WHERE owner = $1 AND id = $2 RETURNING ${SUBSCRIPTION}`,
    lockSecrets: `SELECT secret, previous_secrets FROM ${t}webhook_subscriptions WHERE owner = $1 AND id = $2
                  FOR UPDATE`,
    signingTarget: `SELECT url, secret, previous_secrets FROM ${t}webhook_subscriptions WHERE owner = $1 AND id = $2`,
    rotateSecret: `UPDATE ${t}webhook_subscriptions
                   SET previous_secrets = $4, secret = $3, updated_at = greatest($5, updated_at + 1)
                   WHERE owner = $1 AND id = $2 RETURNING ${SUBSCRIPTION}`,
    // Its deliveries go with it (ON DELETE CASCADE).
    delete: `DELETE FROM ${t}webhook_subscriptions WHERE owner = $1 AND id = $2`,
    listDeliveries: `SELECT ${DELIVERY_COLUMNS} FROM ${t}webhook_deliveries
                     WHERE subscription_id = $1 AND id < $2 AND ($4::text IS NULL OR status = $4)
                       AND ($5::text IS NULL OR event_type = $5)
                     ORDER BY id DESC LIMIT $3`,
    getDelivery: `SELECT ${DELIVERY_COLUMNS.split(', ').map((column) => `d.${column}`).join(', ')},
                    d.message_id, d.payload
                  FROM ${t}webhook_deliveries d JOIN ${t}webhook_subscriptions s ON s.id = d.subscription_id
                  WHERE s.owner = $1 AND s.id = $2 AND d.id = $3`,
    attemptsOf: `SELECT at, duration_ms, status_code, error, response_body FROM ${t}webhook_attempts
                 WHERE delivery_id = $1 ORDER BY id`,
    findDelivery: `SELECT s.disabled
                   FROM ${t}webhook_deliveries d JOIN ${t}webhook_subscriptions s ON s.id = d.subscription_id
                   WHERE s.owner = $1 AND s.id = $2 AND d.id = $3`,
    recover: `UPDATE ${t}webhook_deliveries d SET status = 'pending', next_attempt_at = $4
              FROM ${t}webhook_subscriptions s
              WHERE s.owner = $1 AND s.id = $2 AND d.subscription_id = s.id AND d.status = 'failed'
                AND d.created_at >= $3`,
    retryDelivery: `UPDATE ${t}webhook_deliveries SET status = 'pending', next_attempt_at = $3
                    WHERE id = $1 AND subscription_id = $2 RETURNING ${DELIVERY_COLUMNS}`
  } as const
}

type Run = RunStatement<keyof ReturnType<typeof statements>>

const runner = (schema: string | undefined): Run => statementRunner(statements(schema))

type SubscriptionOperations = Pick<WebhookStore, 'createSubscription' | 'listSubscriptions' | 'getSubscription' |
  'updateSubscription' | 'deleteSubscription' | 'rotateSecret' | 'signingTarget'>

/** Subscriptions, each scoped by its owner. */
export function postgresSubscriptions (pool: pg.Pool, schema: string | undefined): SubscriptionOperations {
  const run = runner(schema)
  const subscription = async (
    db: Queryable, statement: Parameters<Run>[1], values: unknown[]
  ): Promise<WebhookSubscription | undefined> => {
    const { rows: [row] } = await run<PgSubscriptionRow>(db, statement, values)
    return row === undefined ? undefined : toSubscription(row)
  }
  return {
    async createSubscription ({ owner, url, events, description, disabled, secret }, now, maxPerOwner) {
      const insert = async (db: Queryable): Promise<WebhookSubscription> =>
        await subscription(db, 'insert',
          [owner, url, [...events], description ?? null, disabled, secret, now]) as WebhookSubscription
      if (maxPerOwner === undefined) return await insert(pool)
      return await inTransaction(pool, async (client) => {
        await run(client, 'lockOwner', [owner])
        const { rows: [count] } = await run<{ n: number }>(client, 'count', [owner])
        if ((count?.n ?? 0) >= maxPerOwner) throw subscriptionLimit(maxPerOwner)
        return await insert(client)
      })
    },
    async listSubscriptions (owner, { limit, after }) {
      const { rows } = await run<PgSubscriptionRow>(pool, 'list', [owner, after ?? 0n, limit + 1])
      return { subscriptions: rows.slice(0, limit).map(toSubscription), hasMore: rows.length > limit }
    },
    getSubscription: async (owner, id) => await subscription(pool, 'get', [owner, id]),
    async signingTarget (owner, id, now) {
      const { rows: [row] } = await run<{ url: string, secret: string, previous_secrets: string }>(
        pool, 'signingTarget', [owner, id])
      return row === undefined
        ? undefined
        : { url: row.url, secrets: activeSecrets(row.secret, row.previous_secrets, now) }
    },
    updateSubscription: async (owner, id, changes, now) => await subscription(pool, 'update', [
      owner, id, changes.url ?? null, changes.events === undefined ? null : [...changes.events],
      changes.description !== undefined, changes.description ?? null, changes.disabled ?? null, now
    ]),
    deleteSubscription: async (owner, id) => (await run(pool, 'delete', [owner, id])).rowCount === 1,
    async rotateSecret (owner, id, secret, previousUntil, now) {
      return await inTransaction(pool, async (client) => {
        const { rows: [current] } =
          await run<{ secret: string, previous_secrets: string }>(client, 'lockSecrets', [owner, id])
        if (current === undefined) return undefined
        const previous = afterRotation(current.secret, previousUntil, current.previous_secrets, now)
        return await subscription(client, 'rotateSecret', [owner, id, secret, previous, now])
      })
    }
  }
}

type DeliveryLogOperations =
  Pick<WebhookStore, 'listDeliveries' | 'getDelivery' | 'recoverDeliveries' | 'retryDelivery'>

/**
 * A subscription's deliveries as its owner inspects and re-queues them; `fanOutAll` first makes every
 * waiting event a delivery.
 */
export function postgresDeliveryLog (
  pool: pg.Pool, schema: string | undefined, fanOutAll: () => Promise<void>
): DeliveryLogOperations {
  const run = runner(schema)
  const owned = async (owner: string, id: bigint): Promise<boolean> =>
    (await run(pool, 'get', [owner, id])).rows.length === 1
  return {
    async listDeliveries (owner, subscriptionId, { limit, before, status, eventType }) {
      if (!await owned(owner, subscriptionId)) return undefined
      await fanOutAll()
      const { rows } = await run<DeliveryRow>(pool, 'listDeliveries',
        [subscriptionId, before ?? MAX_ID, limit + 1, status ?? null, eventType ?? null])
      return { deliveries: rows.slice(0, limit).map(toDelivery), hasMore: rows.length > limit }
    },
    async getDelivery (owner, subscriptionId, deliveryId) {
      const { rows: [row] } = await run<DeliveryDetailRow>(pool, 'getDelivery', [owner, subscriptionId, deliveryId])
      if (row === undefined) return undefined
      const { rows: attempts } = await run<AttemptRow>(pool, 'attemptsOf', [deliveryId])
      return toDeliveryDetail(row, attempts)
    },
    async recoverDeliveries (owner, subscriptionId, since, now) {
      if (!await owned(owner, subscriptionId)) return undefined
      return (await run(pool, 'recover', [owner, subscriptionId, since, now])).rowCount ?? 0
    },
    async retryDelivery (owner, subscriptionId, deliveryId, now) {
      const { rows: [found] } =
        await run<{ disabled: boolean }>(pool, 'findDelivery', [owner, subscriptionId, deliveryId])
      if (found === undefined) return { status: 'not-found' }
      if (found.disabled) return { status: 'subscription-disabled' }
      const { rows: [row] } = await run<DeliveryRow>(pool, 'retryDelivery', [deliveryId, subscriptionId, now])
      return row === undefined ? { status: 'not-found' } : { status: 'ok', delivery: toDelivery(row) }
    }
  }
}
