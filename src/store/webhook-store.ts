import { StoreOpenError, subscriptionLimit } from '../lib/errors.js'
import {
  activeSecrets, afterRotation, attemptTexts, flag, toDelivery, toDeliveryDetail, toSubscription, type AttemptRow,
  type DeliveryDetailRow, type DeliveryRow, type Int, type SubscriptionRow
} from '../webhooks/rows.js'
import type {
  CompletionResult, DeliveryCompletion, WebhookStore, WebhookSubscription
} from '../webhooks/store-contract.js'

/** A statement with PostgreSQL's `$n` placeholders, and its values. */
export interface Statement { sql: string, values: readonly unknown[] }

export interface Answer { rows: readonly unknown[], changes: number }

/** An operation's statements, written once: run synchronously in SQLite's transaction, awaited on PostgreSQL. */
export type Steps<T> = Generator<Statement, T, Answer>

export function * query (sql: string, values: readonly unknown[] = []): Steps<Answer> {
  return yield { sql, values }
}

export function * rows<R> (sql: string, values: readonly unknown[] = []): Steps<R[]> {
  return (yield { sql, values }).rows as R[]
}

export function * row<R> (sql: string, values: readonly unknown[] = []): Steps<R | undefined> {
  return (yield { sql, values }).rows[0] as R | undefined
}

export function runSteps<T> (steps: Steps<T>, answer: (statement: Statement) => Answer): T {
  let next = steps.next()
  while (next.done !== true) next = steps.next(answer(next.value))
  return next.value
}

export async function awaitSteps<T> (steps: Steps<T>, answer: (statement: Statement) => Promise<Answer>): Promise<T> {
  let next = steps.next()
  while (next.done !== true) next = steps.next(await answer(next.value))
  return next.value
}

/** `dispatcher`: on PostgreSQL's bookkeeping pool; `alone`: each statement may commit alone. */
interface Via { dispatcher?: boolean, alone?: boolean }

export interface WebhookExecutor {
  /** A read; `settle` holds an answer until what it may show is durable (SQLite's group commit). */
  peek: <T>(steps: Steps<T>, via?: Via) => Promise<T>
  settle: <T>(value: T) => Promise<T>
  /** One transaction, answered once committed (and, on SQLite, flushed as its sync level asks). */
  write: <T>(steps: Steps<T>, via?: Via) => Promise<T>
  /** The dispatcher's transactions, never waited for on disk: a crash can only make a delivery go again. */
  bookkeep: (transactions: ReadonlyArray<Steps<unknown>>) => Promise<void>
}

interface SqlParts {
  /** tablePrefix: `schema.` or nothing. */
  t: string
  /** The id the next outbox event will get: a new subscription receives that one and later ones. */
  nextEventId: string
  receives: (eventId: string, type: string) => string
  /** Queues a create behind the owner's others until commit, so its count holds (PostgreSQL). */
  lockOwner?: string
  /** SQLite's foreign keys may be off. */
  deleteDeliveries?: boolean
}

/** Named columns, never `*`: a later migration's column never reaches an older instance's rows. */
const SUBSCRIPTION = 'id, url, events, description, disabled, secret, previous_secrets, created_at, updated_at'
const DELIVERY = 'id, event_type, status, attempts, last_attempt_at, last_status_code, last_error, next_attempt_at, ' +
  'created_at'

/** Makes each event `e` of `events` a pending delivery for every subscription `s` that receives it. */
export const fanOutSql = (t: string, receives: SqlParts['receives'], events: string): string =>
  `INSERT INTO ${t}webhook_deliveries (subscription_id, message_id, event_type, payload, status, attempts,
     next_attempt_at, created_at, request_id, traceparent)
   SELECT s.id, e.message_id, e.event_type, e.payload, 'pending', 0, e.created_at, e.created_at, e.request_id,
     e.traceparent
   FROM ${events} JOIN ${t}webhook_subscriptions s ON ${receives('e.id', 'e.event_type')}`

/** Statements both stores run, in PostgreSQL's syntax (SQLite's store rewrites casts, locks and greatest). */
export function webhookSql ({ t, nextEventId, receives, lockOwner, deleteDeliveries }: SqlParts) {
  const subscriptions = `${t}webhook_subscriptions`
  const deliveries = `${t}webhook_deliveries`
  const owned = 'owner = $1 AND id = $2'
  return {
    insert: `INSERT INTO ${subscriptions}
               (owner, url, events, description, disabled, secret, created_at, updated_at, first_event_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7, ${nextEventId}) RETURNING ${SUBSCRIPTION}`,
    lockOwner,
    count: `SELECT count(*)::integer AS n FROM ${subscriptions} WHERE owner = $1`,
    get: `SELECT ${SUBSCRIPTION} FROM ${subscriptions} WHERE ${owned}`,
    list: `SELECT ${SUBSCRIPTION} FROM ${subscriptions} WHERE owner = $1 AND id > $2 ORDER BY id LIMIT $3`,
    // A new URL or a re-enable forgets past failures. updated_at strictly increases, as for plants.
    update: `UPDATE ${subscriptions} SET
               url = coalesce($3, url), events = coalesce($4, events),
               description = CASE WHEN $5::boolean THEN $6 ELSE description END, disabled = coalesce($7, disabled),
               failing_since = CASE WHEN coalesce($3, url) <> url OR (disabled AND NOT coalesce($7, disabled))
                                    THEN NULL ELSE failing_since END,
               updated_at = greatest($8, updated_at + 1)
             WHERE ${owned} RETURNING ${SUBSCRIPTION}`,
    lockSecrets: `SELECT secret, previous_secrets FROM ${subscriptions} WHERE ${owned} FOR UPDATE`,
    rotateSecret: `UPDATE ${subscriptions}
                   SET previous_secrets = $4, secret = $3, updated_at = greatest($5, updated_at + 1)
                   WHERE ${owned} RETURNING ${SUBSCRIPTION}`,
    deleteDeliveries: deleteDeliveries === true
      ? `DELETE FROM ${deliveries} WHERE subscription_id IN (SELECT id FROM ${subscriptions} WHERE ${owned})`
      : undefined,
    delete: `DELETE FROM ${subscriptions} WHERE ${owned}`,
    listDeliveries: `SELECT ${DELIVERY} FROM ${deliveries}
                     WHERE subscription_id = $1 AND id < $2 AND ($4::text IS NULL OR status = $4)
                       AND ($5::text IS NULL OR event_type = $5)
                     ORDER BY id DESC LIMIT $3`,
    getDelivery: `SELECT ${DELIVERY.split(', ').map((column) => `d.${column}`).join(', ')}, d.message_id, d.payload
                  FROM ${deliveries} d JOIN ${subscriptions} s ON s.id = d.subscription_id
                  WHERE s.owner = $1 AND s.id = $2 AND d.id = $3`,
    attemptsOf: `SELECT at, duration_ms, status_code, error, response_body FROM ${t}webhook_attempts
                 WHERE delivery_id = $1 ORDER BY id`,
    findDelivery: `SELECT s.disabled FROM ${deliveries} d JOIN ${subscriptions} s ON s.id = d.subscription_id
                   WHERE s.owner = $1 AND s.id = $2 AND d.id = $3`,
    recover: `UPDATE ${deliveries} SET status = 'pending', next_attempt_at = $3
              WHERE subscription_id = $1 AND status = 'failed' AND created_at >= $2`,
    retryDelivery: `UPDATE ${deliveries} SET status = 'pending', next_attempt_at = $3
                    WHERE id = $1 AND subscription_id = $2 RETURNING ${DELIVERY}`,
    leasedSubscription: `SELECT subscription_id FROM ${deliveries} WHERE id = $1 AND lease = $2`,
    // The subscription is locked before the delivery, in the order a delete cascades: no deadlock.
    lockSubscription: `SELECT disabled, failing_since FROM ${subscriptions} WHERE id = $1 FOR NO KEY UPDATE`,
    finish: `UPDATE ${deliveries} SET status = $3, attempts = attempts + 1, next_attempt_at = $4,
               lease = NULL, lease_until = NULL, last_attempt_at = $5, last_status_code = $6, last_error = $7
             WHERE id = $1 AND lease = $2 RETURNING subscription_id`,
    recordAttempt: `INSERT INTO ${t}webhook_attempts (delivery_id, at, duration_ms, status_code, error, response_body)
                    VALUES ($1, $2, $3, $4, $5, $6)`,
    succeeded: `UPDATE ${subscriptions} SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`,
    failedAttempt: `UPDATE ${subscriptions}
                    SET failing_since = coalesce(failing_since, $2), disabled = disabled OR $3,
                      updated_at = CASE WHEN $3 AND NOT disabled THEN greatest($2, updated_at + 1) ELSE updated_at END
                    WHERE id = $1`,
    activeOwners: `SELECT count(DISTINCT owner)::integer AS n FROM ${subscriptions} WHERE NOT disabled`,
    anyPrunable: `SELECT EXISTS (SELECT 1 FROM ${deliveries} WHERE created_at < $1) AS found`,
    prune: `DELETE FROM ${deliveries} WHERE id IN (
              SELECT id FROM ${deliveries}
              WHERE created_at < $1
                AND (status <> 'pending' OR subscription_id IN (SELECT id FROM ${subscriptions} WHERE disabled))
              LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    empty: `SELECT NOT EXISTS (SELECT 1 FROM ${subscriptions}) AND NOT EXISTS (SELECT 1 FROM ${deliveries})
              AND NOT EXISTS (SELECT 1 FROM ${t}webhook_events) AS empty`,
    backlog: `WITH waiting (created_at) AS (
                SELECT d.created_at FROM ${deliveries} d JOIN ${subscriptions} s ON s.id = d.subscription_id
                WHERE d.status = 'pending' AND NOT s.disabled
                UNION ALL
                SELECT e.created_at FROM ${t}webhook_events e
                JOIN ${subscriptions} s ON ${receives('e.id', 'e.event_type')})
              SELECT count(*)::integer AS pending, min(created_at) AS oldest FROM waiting`
  }
}

type WebhookSql = ReturnType<typeof webhookSql>

interface WebhookDialect extends WebhookExecutor {
  sql: WebhookSql
  /** The events column's value (SQLite: names between spaces; PostgreSQL: text[]). */
  events: (types: readonly string[]) => unknown
  /** Runs inside a write that changes which events subscriptions want (SQLite's outbox re-reads them). */
  changed?: () => void
  /** Before a listing: it shows every event written before it. */
  fanOutAll: () => Promise<void>
  /** Many successes in one statement (PostgreSQL), answering the ids whose lease still held. */
  succeedMany?: (completions: readonly DeliveryCompletion[]) => Statement
}

/** The cursor of a first delivery page, which walks back from the newest. */
const MAX_ID = 9223372036854775807n

/** Deliveries pruned per statement: one long DELETE would hold the write lock (and every write) up. */
const PRUNE_BATCH = 1000

export const FAN_OUT_ALL_BATCH = 1000

/** Enabled subscriptions created before the event that asked for its type (`wants`: the dialect's test). */
export const receives = (eventId: string, wants: string, enabled: string): string =>
  `${enabled} AND s.first_event_id <= ${eventId} AND ${wants}`

/** The receiver said so (410), or the subscription has failed since before the cutoff. */
const disablesSubscription = (done: DeliveryCompletion, failingSince: number | null): boolean =>
  done.disableSubscription || (failingSince ?? done.attemptedAt) <= done.failingDisableBefore

export function checkWebhookSchema (version: number, required: number): void {
  if (version < required) {
    throw new StoreOpenError(
      `the database schema (version ${version}) has no webhook tables yet: open the plant store on it first`
    )
  }
}

const maybe = (stored: SubscriptionRow | undefined): WebhookSubscription | undefined =>
  stored === undefined ? undefined : toSubscription(stored)

const NOT_RECORDED: CompletionResult = { recorded: false, subscriptionDisabled: false }

type Shared = Omit<WebhookStore, 'enqueue' | 'claimDue' | 'releaseDeliveries' | 'renewLeases' |
  'releaseOrphanedLeases' | 'listen' | 'close' | 'poolStats'>

const owned = function * (sql: WebhookSql, owner: string, id: bigint): Steps<boolean> {
  return (yield * row(sql.get, [owner, id])) !== undefined
}

const read = async <T>(d: WebhookDialect, steps: Steps<T>): Promise<T> => await d.settle(await d.peek(steps))

function completions ({ sql, changed = () => {}, succeedMany, bookkeep }: WebhookDialect) {
  /** Its subscription's id, or undefined when its lease no longer held. */
  const finish = function * (done: DeliveryCompletion): Steps<bigint | undefined> {
    const { error, body } = attemptTexts(done)
    const next = done.status === 'pending' ? done.nextAttemptAt ?? done.attemptedAt : null
    // Yields without a helper's generator: the completions are the dispatcher's hot path.
    const [finished] = (yield {
      sql: sql.finish,
      values: [done.id, done.lease, done.status, next, done.attemptedAt, done.statusCode ?? null, error]
    }).rows as Array<{ subscription_id: bigint }>
    if (finished === undefined) return undefined
    yield {
      sql: sql.recordAttempt,
      values: [done.id, done.attemptedAt, Math.round(done.durationMs ?? 0), done.statusCode ?? null, error, body]
    }
    return finished.subscription_id
  }
  /** The ids whose lease still held. */
  const succeed = function * (completions: readonly DeliveryCompletion[]): Steps<Set<bigint>> {
    if (succeedMany !== undefined) {
      const { sql: text, values } = succeedMany(completions)
      return new Set((yield * rows<{ id: bigint }>(text, values)).map(({ id }) => id))
    }
    const recorded = new Set<bigint>()
    for (const done of completions) {
      const id = yield * finish(done)
      if (id === undefined) continue
      yield { sql: sql.succeeded, values: [id] }
      recorded.add(done.id)
    }
    return recorded
  }
  const fail = function * (done: DeliveryCompletion): Steps<CompletionResult> {
    const leased = yield * row<{ subscription_id: bigint }>(sql.leasedSubscription, [done.id, done.lease])
    if (leased === undefined) return NOT_RECORDED
    const id = leased.subscription_id
    const health = yield * row<{ disabled: unknown, failing_since: Int | null }>(sql.lockSubscription, [id])
    if (health === undefined || (yield * finish(done)) === undefined) return NOT_RECORDED
    const disable = disablesSubscription(done, health.failing_since === null ? null : Number(health.failing_since))
    yield * query(sql.failedAttempt, [id, done.attemptedAt, disable])
    if (disable) changed()
    return { recorded: true, subscriptionDisabled: disable && !flag(health.disabled) }
  }
  async function completeDeliveries (completions: readonly DeliveryCompletion[]): Promise<CompletionResult[]> {
    const results = new Array<CompletionResult>(completions.length)
    const succeeded = completions.filter((done) => done.status === 'succeeded')
    const transactions: Array<Steps<unknown>> = []
    // Successes first: a success in the batch never leaves its subscription disabled.
    if (succeeded.length > 0) {
      transactions.push((function * () {
        const recorded = yield * succeed(succeeded)
        completions.forEach((done, i) => {
          if (done.status === 'succeeded') results[i] = { recorded: recorded.has(done.id), subscriptionDisabled: false }
        })
      })())
    }
    completions.forEach((done, i) => {
      if (done.status !== 'succeeded') transactions.push((function * () { results[i] = yield * fail(done) })())
    })
    if (transactions.length > 0) await bookkeep(transactions)
    return results
  }
  return {
    completeDelivery: async (completion: DeliveryCompletion) =>
      (await completeDeliveries([completion]))[0] as CompletionResult,
    completeDeliveries
  }
}

function subscriptions (d: WebhookDialect): Pick<Shared, 'createSubscription' | 'listSubscriptions' |
  'getSubscription' | 'signingTarget' | 'updateSubscription' | 'deleteSubscription' | 'rotateSecret'> {
  const { sql } = d
  const changed = d.changed ?? (() => {})
  return {
    async createSubscription ({ owner, url, events, description, disabled, secret }, now, maxPerOwner) {
      return toSubscription(await d.write((function * () {
        changed()
        if (maxPerOwner !== undefined) {
          if (sql.lockOwner !== undefined) yield * query(sql.lockOwner, [owner])
          const counted = yield * row<{ n: Int }>(sql.count, [owner])
          if (Number(counted?.n ?? 0) >= maxPerOwner) throw subscriptionLimit(maxPerOwner)
        }
        const values = [owner, url, d.events(events), description ?? null, disabled, secret, now]
        return (yield * row<SubscriptionRow>(sql.insert, values)) as SubscriptionRow
      })(), { alone: maxPerOwner === undefined }))
    },
    async listSubscriptions (owner, { limit, after }) {
      const found = await read(d, rows<SubscriptionRow>(sql.list, [owner, after ?? 0n, limit + 1]))
      return { subscriptions: found.slice(0, limit).map(toSubscription), hasMore: found.length > limit }
    },
    getSubscription: async (owner, id) => maybe(await read(d, row<SubscriptionRow>(sql.get, [owner, id]))),
    async signingTarget (owner, id, now) {
      const found = await read(d, row<SubscriptionRow>(sql.get, [owner, id]))
      return found === undefined
        ? undefined
        : { url: found.url, secrets: activeSecrets(found.secret, found.previous_secrets, now) }
    },
    updateSubscription: async (owner, id, changes, now) => maybe(await d.write((function * () {
      changed()
      return yield * row<SubscriptionRow>(sql.update, [
        owner, id, changes.url ?? null, changes.events === undefined ? null : d.events(changes.events),
        changes.description !== undefined, changes.description ?? null, changes.disabled ?? null, now
      ])
    })(), { alone: true })),
    deleteSubscription: async (owner, id) => await d.write((function * () {
      changed()
      if (sql.deleteDeliveries !== undefined) yield * query(sql.deleteDeliveries, [owner, id])
      return (yield * query(sql.delete, [owner, id])).changes === 1
    })(), { alone: sql.deleteDeliveries === undefined }),
    rotateSecret: async (owner, id, secret, previousUntil, now) => maybe(await d.write((function * () {
      const current = yield * row<{ secret: string, previous_secrets: string }>(sql.lockSecrets, [owner, id])
      if (current === undefined) return undefined
      const previous = afterRotation(current.secret, previousUntil, current.previous_secrets, now)
      return yield * row<SubscriptionRow>(sql.rotateSecret, [owner, id, secret, previous, now])
    })()))
  }
}

function deliveryLog (d: WebhookDialect): Pick<Shared, 'listDeliveries' | 'getDelivery' | 'recoverDeliveries' |
  'retryDelivery'> {
  const { sql } = d
  return {
    async listDeliveries (owner, subscriptionId, { limit, before, status, eventType }) {
      if (!await d.peek(owned(sql, owner, subscriptionId))) return await d.settle(undefined)
      await d.fanOutAll()
      const found = await read(d, rows<DeliveryRow>(sql.listDeliveries,
        [subscriptionId, before ?? MAX_ID, limit + 1, status ?? null, eventType ?? null]))
      return { deliveries: found.slice(0, limit).map(toDelivery), hasMore: found.length > limit }
    },
    getDelivery: async (owner, subscriptionId, deliveryId) => await read(d, (function * () {
      const found = yield * row<DeliveryDetailRow>(sql.getDelivery, [owner, subscriptionId, deliveryId])
      if (found === undefined) return undefined
      return toDeliveryDetail(found, yield * rows<AttemptRow>(sql.attemptsOf, [deliveryId]))
    })()),
    recoverDeliveries: async (owner, subscriptionId, since, now) => await d.write((function * () {
      if (!(yield * owned(sql, owner, subscriptionId))) return undefined
      return (yield * query(sql.recover, [subscriptionId, since, now])).changes
    })()),
    retryDelivery: async (owner, subscriptionId, deliveryId, now) => await d.write((function * () {
      const found = yield * row<{ disabled: unknown }>(sql.findDelivery, [owner, subscriptionId, deliveryId])
      if (found === undefined) return { status: 'not-found' as const }
      if (flag(found.disabled)) return { status: 'subscription-disabled' as const }
      const retried = yield * row<DeliveryRow>(sql.retryDelivery, [deliveryId, subscriptionId, now])
      return retried === undefined
        ? { status: 'not-found' as const }
        : { status: 'ok' as const, delivery: toDelivery(retried) }
    })())
  }
}

function upkeep ({ sql, peek, write }: WebhookDialect): Pick<Shared, 'pruneDeliveries' | 'activeOwners' | 'empty' |
  'backlog'> {
  return {
    async pruneDeliveries (before) {
      if (!flag((await peek(row<{ found: unknown }>(sql.anyPrunable, [before]), { dispatcher: true }))?.found)) return 0
      let total = 0
      for (;;) {
        const { changes } = await write(query(sql.prune, [before, PRUNE_BATCH]), { dispatcher: true, alone: true })
        total += changes
        if (changes < PRUNE_BATCH) return total
      }
    },
    activeOwners: async () => Number((await peek(row<{ n: Int }>(sql.activeOwners), { dispatcher: true }))?.n ?? 0),
    empty: async () => flag((await peek(row<{ empty: unknown }>(sql.empty)))?.empty),
    async backlog () {
      const found = await peek(row<{ pending: Int, oldest: Int | null }>(sql.backlog))
      return {
        pending: Number(found?.pending ?? 0),
        oldestCreatedAt: found?.oldest == null ? undefined : Number(found.oldest)
      }
    }
  }
}

export function webhookOperations (dialect: WebhookDialect): Shared {
  return { ...subscriptions(dialect), ...deliveryLog(dialect), ...completions(dialect), ...upkeep(dialect) }
}
