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
  url: string
  poolMax?: number
  connectTimeoutMs?: number
  /** statement_timeout and lock_timeout of every pooled connection, so no request waits for ever. */
  statementTimeoutMs?: number
  onIdleError?: (err: Error) => void
  startup?: StartupRetry
  notifyIntervalMs?: number
}

type Queryable = pg.Pool | pg.PoolClient

const SEQUENCE_LIMIT_EXCEEDED = '2200H'

const PLANT = 'id, name, tag, created_at, updated_at'

/** nextval fails (2200H) past MAXVALUE 2^53 - 1 instead of going on. */
const INSERT_GENERATED = `INSERT INTO plants (id, name, tag, created_at, updated_at)
                    SELECT next.id, $1, $2, $3, $3 FROM (SELECT nextval('plants_id_seq') AS id) AS next
                    WHERE NOT EXISTS (SELECT 1 FROM chosen_ids WHERE chosen_ids.id = next.id)
                    ON CONFLICT (id) DO NOTHING RETURNING ${PLANT}`

const SQL = {
  ping: 'SELECT 1',
  get: `SELECT ${PLANT} FROM plants WHERE id = $1`,
  lockRow: `SELECT ${PLANT} FROM plants WHERE id = $1 FOR UPDATE`,
  // Keyset pagination: a deep page costs what the first one does.
  list: `SELECT ${PLANT} FROM plants WHERE id > $1 ORDER BY id LIMIT $2`,
  listByTag: `SELECT ${PLANT} FROM plants WHERE tag = $3 AND id > $1 ORDER BY id LIMIT $2`,
  // A chosen id the sequence has yet to reach is remembered, so the sequence skips it even after it is deleted.
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
  createGenerated: plantWriteWithEventSql(INSERT_GENERATED, PLANT, 4),
  // Draw the sequence past the run of taken ids with nextval: setval could move it back under a
  // concurrent draw and hand out an id twice.
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
  // updated_at strictly increases; a write that changes nothing keeps the row as it is (same ETag, no event).
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
  // Rows another instance is deleting are skipped, never waited for.
  expireKeys: `DELETE FROM idempotency_keys WHERE (scope, key) IN (
                 SELECT scope, key FROM idempotency_keys WHERE created_at <= $1 LIMIT 100 FOR UPDATE SKIP LOCKED)`
} as const

async function run<R extends pg.QueryResultRow = pg.QueryResultRow> (db: Queryable, statement: keyof typeof SQL, values: unknown[] = []): Promise<pg.QueryResult<R>> {
  return await db.query<R>({ name: `plant-store-${statement}`, text: SQL[statement], values })
}

/** Several instances starting together queue on an advisory lock, so each step runs exactly once. */
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

/** The shared store: any number of stateless instances can serve one database. */
export async function createPostgresStore (options: PostgresStoreOptions): Promise<PlantStore> {
  const target = parsePostgresUrl(options.url)
  const connection = {
    connectionString: target.connectionString,
    application_name: 'plant-store',
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000
  }
  // Migrations run without the statement bounds (a step may take a while); an unreachable database
  // is retried for PG_STARTUP_TIMEOUT_MS, so a service and its database can start together.
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

  async function guard<T> (work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (err) {
      throw postgresFailure(err) ?? err
    }
  }

  // At most one NOTIFY per NOTIFY_INTERVAL_MS, as notifying commits serialize on PostgreSQL's queue
  // lock: see docs/performance.md#what-the-measurements-decided. Own dispatchers are woken directly.
  let lastNotifyAt = Number.NEGATIVE_INFINITY
  const notifyIntervalMs = options.notifyIntervalMs ?? NOTIFY_INTERVAL_MS
  const wakers = new Set<() => void>()

  /** The transactional outbox: the event commits with the change or not at all. */
  async function emit (client: pg.PoolClient, type: WebhookEventType, plant: Plant, now: number, origin: EventOrigin | undefined): Promise<number> {
    return await enqueuePostgresEvent(client, { type, plant, occurredAt: now, ...(origin !== undefined && { origin }) }, now, claimNotify(now))
  }

  /** Claimed before the commit; one that then rolls back costs other instances at most a poll interval. */
  function claimNotify (now: number): boolean {
    const notify = now - lastNotifyAt >= notifyIntervalMs
    if (notify) lastNotifyAt = now
    return notify
  }

  function afterCommit<T> (result: T, deliveries: number): T {
    if (deliveries > 0) for (const wake of wakers) wake()
    return result
  }

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

  async function insert (db: Queryable, { id, name, tag }: NewPlant, now: number): Promise<PlantRow> {
    if (id !== undefined) {
      const { rows: [row] } = await run<PlantRow>(db, 'insertChosen', [id, name, tag ?? null, now])
      if (row === undefined) throw plantIdTaken(id)
      return row
    }
    try {
      // Each retry moves the sequence past the taken ids it ran into, so this ends within a round or two.
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
