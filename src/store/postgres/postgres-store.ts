import pg from 'pg'
import { pgTypes } from './types.js'
import { idempotencyKeyReused, idsExhausted, plantIdTaken, StoreOpenError } from '../../errors.js'
import type { Plant } from '../../schemas/plant.js'
import {
  IDEMPOTENCY_TTL_MS, MAX_ASSIGNED_ID, newerSchemaProblem,
  type CreateResult, type IdempotencyKey, type IfMatch, type ListPage, type ListQuery,
  type NewPlant, type PlantChanges, type PlantStore
} from '../store.js'
import { rememberedPlant, toPlant, writableRow, type IdempotencyRow, type PlantRow } from '../rows.js'
import { isoTime } from '../iso-time.js'
import { inTransaction, parsePostgresUrl, postgresFailure, statementBounds, type PostgresTarget } from './connection.js'
import { migrations } from './migrations.js'
import { retryUntilReachable, type StartupRetry } from './startup.js'
import { createPostgresWebhookStore, enqueuePostgresEvent, plantWriteWithEventSql, postgresEventValues } from './webhook-store.js'
import type { EventOrigin, WebhookEventType } from '../../webhooks/events.js'
import type { WebhookStore } from '../../webhooks/store.js'

/** At most one NOTIFY to other instances' dispatchers per this many milliseconds from one process's writes. */
export const NOTIFY_INTERVAL_MS = 50

export interface PostgresStoreOptions {
  /** A `postgres://` URL; `?schema=name` keeps the tables in that schema (created when missing). */
  url: string
  /** The most connections this process opens (default 10). */
  poolMax?: number
  /** How long to wait for a connection before answering 503 (default 5000 ms). */
  connectTimeoutMs?: number
  /**
   * The longest any statement may run or wait for a lock (default 5000 ms): statement_timeout and
   * lock_timeout of every pooled connection, so no request waits for ever (it fails `unavailable`).
   */
  statementTimeoutMs?: number
  /** Told about errors of idle pooled connections (the server went away); they never crash the process. */
  onIdleError?: (err: Error) => void
  /** While the database cannot be reached at start-up, retry for this long (default: try once). */
  startup?: StartupRetry
  /** At most one NOTIFY to other instances' dispatchers per this many ms (default NOTIFY_INTERVAL_MS; tests). */
  notifyIntervalMs?: number
}

/** The pool (each statement on any free connection) or one connection (inside a transaction). */
type Queryable = pg.Pool | pg.PoolClient

/** SQLSTATE of nextval past the sequence's MAXVALUE (2^53 - 1): no id is left to assign. */
const SEQUENCE_LIMIT_EXCEEDED = '2200H'

/** Named columns, never `*`: a prepared statement keeps its result shape when a later migration adds one. */
const PLANT = 'id, name, tag, created_at, updated_at'

/**
 * The sequence's next id, unless a plant has it or a client chose it (then nothing is inserted).
 * The sequence's MAXVALUE is 2^53 - 1: beyond it nextval fails (2200H) instead of going on.
 */
const INSERT_GENERATED = `INSERT INTO plants (id, name, tag, created_at, updated_at)
                    SELECT next.id, $1, $2, $3, $3 FROM (SELECT nextval('plants_id_seq') AS id) AS next
                    WHERE NOT EXISTS (SELECT 1 FROM chosen_ids WHERE chosen_ids.id = next.id)
                    ON CONFLICT (id) DO NOTHING RETURNING ${PLANT}`

/** Every statement, prepared once per connection under its key (see `run`). */
const SQL = {
  ping: 'SELECT 1',
  get: `SELECT ${PLANT} FROM plants WHERE id = $1`,
  lockRow: `SELECT ${PLANT} FROM plants WHERE id = $1 FOR UPDATE`,
  // Keyset pagination: a range scan from the cursor, so a deep page costs what the first one does.
  list: `SELECT ${PLANT} FROM plants WHERE id > $1 ORDER BY id LIMIT $2`,
  listByTag: `SELECT ${PLANT} FROM plants WHERE tag = $3 AND id > $1 ORDER BY id LIMIT $2`,
  // A chosen id that is taken inserts nothing (and waits for a concurrent insert of it to settle).
  // One the sequence has yet to reach is remembered in the same statement, so that the sequence
  // skips it even after it is deleted; the sequence never reaches back to one below it.
  insertChosen: `WITH plant AS (
                   INSERT INTO plants (id, name, tag, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
                   ON CONFLICT (id) DO NOTHING RETURNING ${PLANT}),
                 noted AS (
                   INSERT INTO chosen_ids (id)
                   SELECT plant.id FROM plant, plants_id_seq
                   WHERE plant.id > (CASE WHEN is_called THEN last_value ELSE last_value - 1 END)
                     AND plant.id <= ${MAX_ASSIGNED_ID}
                   ON CONFLICT (id) DO NOTHING)
                 SELECT ${PLANT} FROM plant`,
  insertGenerated: INSERT_GENERATED,
  // The same with its event, in one statement: a create without an idempotency key or a chosen id.
  createGenerated: plantWriteWithEventSql(INSERT_GENERATED, PLANT, 4),
  // After the sequence ran into a taken id: walk the run of taken ids from its position to the first
  // free one, draw the sequence up to just before it (nextval only ever goes up: setval could move it
  // back under a concurrent draw and hand out an id twice), and forget chosen ids now behind it.
  skipTaken: `WITH RECURSIVE walk (id) AS (
                SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM plants_id_seq
                UNION ALL
                SELECT walk.id + 1 FROM walk
                WHERE walk.id <= ${MAX_ASSIGNED_ID}
                  AND (EXISTS (SELECT 1 FROM plants WHERE plants.id = walk.id)
                       OR EXISTS (SELECT 1 FROM chosen_ids WHERE chosen_ids.id = walk.id))),
              free AS (SELECT max(id) AS id FROM walk),
              drawn AS (
                SELECT count(nextval('plants_id_seq')) AS n
                FROM free, plants_id_seq, generate_series(1, free.id - 1 - (CASE WHEN is_called THEN last_value ELSE last_value - 1 END))),
              forgotten AS (DELETE FROM chosen_ids USING free WHERE chosen_ids.id < free.id)
              SELECT n FROM drawn`,
  // $2 null keeps the name; $4 false keeps the tag. updated_at strictly increases, even within one millisecond.
  // Times are epoch milliseconds from the service's clock (Date.now()), as in the SQLite store.
  // A write that changes nothing changes nothing (same updatedAt, so the same ETag, and no event):
  // the row is then answered as it is, locked, with `changed` false.
  update: `WITH current AS (SELECT ${PLANT} FROM plants WHERE id = $1 FOR UPDATE),
                changed AS (
                  UPDATE plants SET name = coalesce($2, name), tag = CASE WHEN $4::boolean THEN $3 ELSE tag END,
                                    updated_at = greatest($5, updated_at + 1)
                  WHERE id = $1 AND (name <> coalesce($2, name) OR ($4::boolean AND tag IS DISTINCT FROM $3))
                  RETURNING ${PLANT})
           SELECT ${PLANT}, true AS changed FROM changed
           UNION ALL SELECT ${PLANT}, false AS changed FROM current WHERE NOT EXISTS (SELECT 1 FROM changed)`,
  delete: `DELETE FROM plants WHERE id = $1 RETURNING ${PLANT}`,
  // Same-key creates queue behind each other, so exactly one of them creates.
  lockKey: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))',
  findKey: 'SELECT fingerprint, plant_id, name, tag, created_at, updated_at FROM idempotency_keys WHERE scope = $1 AND key = $2 AND created_at > $3',
  saveKey: `INSERT INTO idempotency_keys (scope, key, fingerprint, plant_id, name, tag, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            ON CONFLICT (scope, key) DO UPDATE SET fingerprint = $3, plant_id = $4, name = $5, tag = $6,
                                                  created_at = $7, updated_at = $8`,
  // A few expired keys per create; rows another instance is deleting are skipped, never waited for.
  expireKeys: `DELETE FROM idempotency_keys WHERE (scope, key) IN (
                 SELECT scope, key FROM idempotency_keys WHERE created_at <= $1 LIMIT 100 FOR UPDATE SKIP LOCKED)`
} as const

/** Runs one of the statements above as a named (prepared) statement. */
async function run<R extends pg.QueryResultRow = pg.QueryResultRow> (db: Queryable, statement: keyof typeof SQL, values: unknown[] = []): Promise<pg.QueryResult<R>> {
  return await db.query<R>({ name: `plant-store-${statement}`, text: SQL[statement], values })
}

/**
 * Applies the missing migrations. Several instances starting together queue on an advisory lock
 * (per schema), so each step runs exactly once.
 */
async function migrate (client: pg.Client, target: PostgresTarget): Promise<void> {
  const lockName = `plant-store migrations ${target.schema ?? ''}`
  try {
    await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lockName])
    try {
      if (target.schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${target.schema}`)
      await client.query(`CREATE TABLE IF NOT EXISTS plant_store_migrations (
        version    integer     PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now())`)
      const { rows } = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM plant_store_migrations')
      const version = rows[0]?.version ?? 0
      if (version > migrations.length) {
        throw new StoreOpenError(newerSchemaProblem(version, migrations.length))
      }
      for (let step = version; step < migrations.length; step++) {
        await client.query('BEGIN')
        try {
          await client.query(migrations[step] as string)
          await client.query('INSERT INTO plant_store_migrations (version) VALUES ($1)', [step + 1])
          await client.query('COMMIT')
        } catch (err) {
          await client.query('ROLLBACK')
          throw err
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockName])
    }
  } finally {
    await client.end()
  }
}

/**
 * The shared store: PostgreSQL through a bounded pool, so any number of stateless instances can
 * serve one database. Migrates before it resolves.
 */
export async function createPostgresStore (options: PostgresStoreOptions): Promise<PlantStore> {
  const target = parsePostgresUrl(options.url)
  const connection = {
    connectionString: target.connectionString,
    application_name: 'plant-store',
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000
  }
  // Migrations run on a connection of their own, without the statement bounds: a step may take a
  // while on a large table, and an instance starting next to a migrating one waits for it.
  // A database still starting (or not yet reachable) is retried with backoff for PG_STARTUP_TIMEOUT_MS,
  // so a service and its database can start together.
  await retryUntilReachable(async () => {
    const migrator = new pg.Client(connection)
    try {
      await migrator.connect()
    } catch (err) {
      await migrator.end().catch(() => {})
      throw err
    }
    await migrate(migrator, target)
  }, options.startup ?? { timeoutMs: 0 })

  const statementTimeoutMs = options.statementTimeoutMs ?? 5000
  const pool = new pg.Pool({
    ...connection,
    max: options.poolMax ?? 10,
    ...statementBounds(statementTimeoutMs),
    types: pgTypes
  })
  // An idle connection the server dropped is an 'error' event: without a listener it kills the process.
  pool.on('error', (err) => { options.onIdleError?.(err) })

  /** A database that cannot be reached, used or written becomes `unavailable` or `storage-full`; anything else stays as it is. */
  async function guard<T> (work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (err) {
      throw postgresFailure(err) ?? err
    }
  }

  /**
   * When this process last asked for a NOTIFY. Each notifying commit takes PostgreSQL's
   * notification-queue lock, so concurrent writes that all notify commit one after another (a
   * webhook benchmark: 0.63 of create throughput with a notification per write, 0.71 without). This
   * process's own dispatcher is woken directly after every commit that wrote deliveries
   * (afterCommit); other instances need only hear that there is work, and at most
   * NOTIFY_INTERVAL_MS later their own poll would find it anyway.
   */
  let lastNotifyAt = Number.NEGATIVE_INFINITY
  const notifyIntervalMs = options.notifyIntervalMs ?? NOTIFY_INTERVAL_MS
  /** This process's dispatchers (the webhook store's `listen` callbacks), as on SQLite. */
  const wakers = new Set<() => void>()

  /**
   * Writes the change's webhook event in the change's own transaction (the transactional outbox):
   * committed with it or not at all. Resolves with how many deliveries it will become (0: no
   * subscription asked for it, and nothing was written).
   */
  async function emit (client: pg.PoolClient, type: WebhookEventType, plant: Plant, now: number, origin: EventOrigin | undefined): Promise<number> {
    return await enqueuePostgresEvent(client, { type, plant, occurredAt: now, ...(origin !== undefined && { origin }) }, now, claimNotify(now))
  }

  /**
   * Whether this write's event should NOTIFY other instances. Claimed before the commit: concurrent
   * writes do not all notify. One that then rolls back (or writes nothing) notifies nobody, which
   * costs the other instances at most a poll interval.
   */
  function claimNotify (now: number): boolean {
    const notify = now - lastNotifyAt >= notifyIntervalMs
    if (notify) lastNotifyAt = now
    return notify
  }

  /** After a commit whose event becomes `deliveries`: wakes this process's dispatcher (no NOTIFY needed for it). */
  function afterCommit<T> (result: T, deliveries: number): T {
    if (deliveries > 0) for (const wake of wakers) wake()
    return result
  }

  /**
   * The common create (a server-assigned id, no idempotency key): the plant and its event in one
   * statement, atomic on its own (see plantWriteWithEventSql), retried past taken ids as insert does.
   */
  async function createGenerated ({ name, tag }: NewPlant, origin: EventOrigin | undefined): Promise<CreateResult> {
    return await guard(async () => {
      const now = Date.now()
      const at = isoTime(now)
      const event = postgresEventValues({ name, ...(tag !== undefined && { tag }), createdAt: at, updatedAt: at }, now, origin, claimNotify(now))
      try {
        for (let attempt = 0; attempt < 10; attempt++) {
          const { rows: [row] } = await run<PlantRow & { deliveries: number }>(pool, 'createGenerated', [name, tag ?? null, now, ...event])
          if (row !== undefined) return afterCommit({ plant: toPlant(row), replayed: false }, row.deliveries)
          await run(pool, 'skipTaken')
        }
      } catch (err) {
        if ((err as { code?: unknown }).code === SEQUENCE_LIMIT_EXCEEDED) throw idsExhausted()
        throw err
      }
      throw new Error('could not generate a free plant id')
    })
  }

  /** Inserts a plant on `db`, in the caller's transaction. */
  async function insert (db: Queryable, { id, name, tag }: NewPlant, now: number): Promise<PlantRow> {
    if (id !== undefined) {
      const { rows: [row] } = await run<PlantRow>(db, 'insertChosen', [id, name, tag ?? null, now])
      if (row === undefined) throw plantIdTaken(id)
      return row
    }
    try {
      // Each retry moves the sequence past the taken ids it ran into, so this ends within a round
      // or two (more only while other instances take the same free ids first).
      for (let attempt = 0; attempt < 10; attempt++) {
        const { rows: [row] } = await run<PlantRow>(db, 'insertGenerated', [name, tag ?? null, now])
        if (row !== undefined) return row
        await run(db, 'skipTaken')
      }
    } catch (err) {
      if ((err as { code?: unknown }).code === SEQUENCE_LIMIT_EXCEEDED) throw idsExhausted()
      throw err
    }
    throw new Error('could not generate a free plant id')
  }

  /**
   * Runs a change of one plant (`statement` answers the changed or deleted row) and writes its event,
   * in one transaction; with If-Match, the row is locked and checked first.
   */
  async function write (id: bigint, statement: 'update' | 'delete', values: unknown[], now: number, ifMatch: IfMatch | undefined, origin: EventOrigin | undefined): Promise<Plant> {
    let deliveries = 0
    const plant = await inTransaction(pool, async (client) => {
      if (ifMatch !== undefined) {
        const { rows: [current] } = await run<PlantRow>(client, 'lockRow', [id])
        writableRow(id, current, ifMatch)
      }
      const { rows: [row] } = await run<PlantRow & { changed?: boolean }>(client, statement, values)
      const changed = toPlant(writableRow(id, row, undefined))
      if (row?.changed === false) return changed
      deliveries = await emit(client, statement === 'delete' ? 'plant.deleted' : 'plant.updated', changed, now, origin)
      return changed
    })
    return afterCommit(plant, deliveries)
  }

  let remote: WebhookStore
  try {
    remote = await createPostgresWebhookStore({
      url: options.url,
      statementTimeoutMs,
      ...(options.connectTimeoutMs !== undefined && { connectTimeoutMs: options.connectTimeoutMs }),
      ...(options.onIdleError !== undefined && { onError: options.onIdleError })
    })
  } catch (err) {
    await pool.end()
    throw postgresFailure(err) ?? err
  }
  // A dispatcher that listens hears of this process's events in process (afterCommit), and of other
  // instances' through LISTEN/NOTIFY.
  const listenRemote = remote.listen
  const webhooks: WebhookStore = {
    ...remote,
    listen: async (wake) => {
      wakers.add(wake)
      const unlisten = await listenRemote?.(wake)
      return async () => {
        wakers.delete(wake)
        await unlisten?.()
      }
    }
  }

  let closed = false

  return {
    webhooks,

    async ping () {
      await guard(async () => { await run(pool, 'ping') })
    },

    async list ({ limit, after, tag }: ListQuery): Promise<ListPage> {
      // One row more than asked tells whether another page follows.
      // Ids are positive, so "after 0" is the first page.
      const { rows } = await guard(async () => tag === undefined
        ? await run<PlantRow>(pool, 'list', [after ?? 0n, limit + 1])
        : await run<PlantRow>(pool, 'listByTag', [after ?? 0n, limit + 1, tag]))
      return { plants: rows.slice(0, limit).map(toPlant), hasMore: rows.length > limit }
    },

    async get (id: bigint) {
      const { rows: [row] } = await guard(async () => await run<PlantRow>(pool, 'get', [id]))
      return row === undefined ? undefined : toPlant(row)
    },

    async create (plant: NewPlant, idempotency?: IdempotencyKey, origin?: EventOrigin): Promise<CreateResult> {
      if (idempotency === undefined && plant.id === undefined) return await createGenerated(plant, origin)
      return await guard(async () => {
        const now = Date.now()
        // The plant, its key and its event are written in one transaction: all or nothing.
        let deliveries = 0
        const result = await inTransaction(pool, async (client): Promise<CreateResult> => {
          if (idempotency !== undefined) {
            const { scope, key, fingerprint } = idempotency
            await run(client, 'lockKey', [`${scope}\n${key}`])
            const { rows: [earlier] } = await run<IdempotencyRow>(client, 'findKey', [scope, key, now - IDEMPOTENCY_TTL_MS])
            if (earlier !== undefined) {
              if (earlier.fingerprint !== fingerprint) throw idempotencyKeyReused()
              return { plant: rememberedPlant(earlier), replayed: true }
            }
            await run(client, 'expireKeys', [now - IDEMPOTENCY_TTL_MS])
          }
          const row = await insert(client, plant, now)
          if (idempotency !== undefined) {
            const { scope, key, fingerprint } = idempotency
            await run(client, 'saveKey', [scope, key, fingerprint, row.id, row.name, row.tag, row.created_at, row.updated_at])
          }
          const created = toPlant(row)
          deliveries = await emit(client, 'plant.created', created, now, origin)
          return { plant: created, replayed: false }
        })
        return afterCommit(result, deliveries)
      })
    },

    async replace (id: bigint, { name, tag }: Omit<NewPlant, 'id'>, ifMatch?: IfMatch, origin?: EventOrigin) {
      const now = Date.now()
      return await guard(async () => await write(id, 'update', [id, name, tag ?? null, true, now], now, ifMatch, origin))
    },

    async update (id: bigint, changes: PlantChanges, ifMatch?: IfMatch, origin?: EventOrigin) {
      const now = Date.now()
      const values = [id, changes.name ?? null, changes.tag ?? null, changes.tag !== undefined, now]
      return await guard(async () => await write(id, 'update', values, now, ifMatch, origin))
    },

    async delete (id: bigint, ifMatch?: IfMatch, origin?: EventOrigin) {
      return await guard(async () => await write(id, 'delete', [id], Date.now(), ifMatch, origin))
    },

    async close () {
      if (closed) return
      closed = true
      await webhooks.close()
      await pool.end()
    }
  }
}
