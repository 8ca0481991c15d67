import pg from 'pg'
import { databaseUnavailable, idempotencyKeyReused, plantIdTaken, StoreOpenError } from '../../errors.js'
import type { Plant } from '../../schemas/plant.js'
import {
  IDEMPOTENCY_TTL_MS, newerSchemaProblem,
  type CreateResult, type IdempotencyKey, type IfMatch, type ListPage, type ListQuery,
  type NewPlant, type PlantChanges, type PlantStore
} from '../store.js'
import { rememberedPlant, toPlant, writableRow, type IdempotencyRow, type PlantRow } from '../rows.js'
import { isConnectionError, parsePostgresUrl, type PostgresTarget } from './connection.js'
import { migrations } from './migrations.js'
import { retryUntilReachable, type StartupRetry } from './startup.js'

export interface PostgresStoreOptions {
  /** A `postgres://` URL; `?schema=name` keeps the tables in that schema (created when missing). */
  url: string
  /** The most connections this process opens (default 10). */
  poolMax?: number
  /** How long to wait for a connection before answering 503 (default 5000 ms). */
  connectTimeoutMs?: number
  /** Told about errors of idle pooled connections (the server went away); they never crash the process. */
  onIdleError?: (err: Error) => void
  /** While the database cannot be reached at start-up, retry for this long (default: try once). */
  startup?: StartupRetry
}

type Client = pg.PoolClient
/** The pool (each statement on any free connection) or one connection (inside a transaction). */
type Queryable = pg.Pool | pg.PoolClient

/** int8 → bigint, so ids beyond 2^53 arrive exactly; every other type as the driver reads it. */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 && format !== 'binary' ? BigInt : pg.types.getTypeParser(oid, format)
  ) as typeof pg.types.getTypeParser
}

/** Named columns, never `*`: a prepared statement keeps its result shape when a later migration adds one. */
const PLANT = 'id, name, tag, created_at, updated_at'

/** Every statement, prepared once per connection under its key (see `run`). */
const SQL = {
  ping: 'SELECT 1',
  get: `SELECT ${PLANT} FROM plants WHERE id = $1`,
  lockRow: `SELECT ${PLANT} FROM plants WHERE id = $1 FOR UPDATE`,
  // Keyset pagination: a range scan from the cursor, so a deep page costs what the first one does.
  list: `SELECT ${PLANT} FROM plants WHERE id > $1 ORDER BY id LIMIT $2`,
  listByTag: `SELECT ${PLANT} FROM plants WHERE tag = $3 AND id > $1 ORDER BY id LIMIT $2`,
  // A chosen id that is taken inserts nothing (and waits for a concurrent insert of it to settle).
  insertChosen: `INSERT INTO plants (id, name, tag, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
                 ON CONFLICT (id) DO NOTHING RETURNING ${PLANT}`,
  insertGenerated: `INSERT INTO plants (name, tag, created_at, updated_at) VALUES ($1, $2, $3, $3)
                    ON CONFLICT (id) DO NOTHING RETURNING ${PLANT}`,
  // Keeps the sequence past every id a client chose, so generated ids do not run into them.
  raiseSequence: "SELECT setval('plants_id_seq', $1) FROM plants_id_seq WHERE $1 > last_value",
  // After a generated id ran into a chosen one anyway (a race with the statement above): catch up.
  catchUpSequence: `SELECT setval('plants_id_seq', greatest(max(id), (SELECT last_value FROM plants_id_seq)))
                    FROM plants`,
  // $2 null keeps the name; $4 false keeps the tag. updated_at strictly increases, even within one millisecond.
  // Times are epoch milliseconds from the service's clock (Date.now()), as in the SQLite store.
  update: `UPDATE plants SET name = coalesce($2, name), tag = CASE WHEN $4::boolean THEN $3 ELSE tag END,
                             updated_at = greatest($5, updated_at + 1)
           WHERE id = $1 RETURNING ${PLANT}`,
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

/** Runs `fn` in a transaction on one pooled connection; a broken connection is dropped, not reused. */
async function inTransaction<T> (pool: pg.Pool, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    const result = await fn(client)
    await client.query('COMMIT')
    return result
  } catch (err) {
    if (isConnectionError(err)) broken = err as Error
    else await client.query('ROLLBACK').catch((rollbackErr: unknown) => { broken = rollbackErr as Error })
    throw err
  } finally {
    client.release(broken)
  }
}

/**
 * Applies the missing migrations. Several instances starting together queue on an advisory lock
 * (per schema), so each step runs exactly once.
 */
async function migrate (pool: pg.Pool, target: PostgresTarget): Promise<void> {
  const client = await pool.connect()
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
    client.release()
  }
}

/**
 * The shared store: PostgreSQL through a bounded pool, so any number of stateless instances can
 * serve one database. Migrates before it resolves.
 */
export async function createPostgresStore (options: PostgresStoreOptions): Promise<PlantStore> {
  const target = parsePostgresUrl(options.url)
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    application_name: 'plant-store',
    max: options.poolMax ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    types
  })
  // An idle connection the server dropped is an 'error' event: without a listener it kills the process.
  pool.on('error', (err) => { options.onIdleError?.(err) })
  try {
    await retryUntilReachable(async () => { await migrate(pool, target) }, options.startup ?? { timeoutMs: 0 })
  } catch (err) {
    await pool.end()
    throw err
  }

  /** "The database cannot be reached" becomes an `unavailable` error; anything else stays as it is. */
  async function guard<T> (work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (err) {
      if (isConnectionError(err)) throw databaseUnavailable(err)
      throw err
    }
  }

  /** Inserts a plant: on `db` alone when no idempotency key has to be written with it. */
  async function insert (db: Queryable, { id, name, tag }: NewPlant, now: number): Promise<PlantRow> {
    if (id !== undefined) {
      await run(db, 'raiseSequence', [id])
      const { rows: [row] } = await run<PlantRow>(db, 'insertChosen', [id, name, tag ?? null, now])
      if (row === undefined) throw plantIdTaken(id)
      return row
    }
    // Each retry moves the sequence past every committed id, so this ends within a round or two.
    for (let attempt = 0; attempt < 10; attempt++) {
      const { rows: [row] } = await run<PlantRow>(db, 'insertGenerated', [name, tag ?? null, now])
      if (row !== undefined) return row
      await run(db, 'catchUpSequence')
    }
    throw new Error('could not generate a free plant id')
  }

  /**
   * Runs a change of one plant (`statement` answers the changed or deleted row). Without If-Match
   * one statement does it; with it, the row is locked and checked first, in one transaction.
   */
  async function write (id: bigint, statement: 'update' | 'delete', values: unknown[], ifMatch?: IfMatch): Promise<Plant> {
    if (ifMatch === undefined) {
      const { rows: [row] } = await run<PlantRow>(pool, statement, values)
      return toPlant(writableRow(id, row, undefined))
    }
    return await inTransaction(pool, async (client) => {
      const { rows: [current] } = await run<PlantRow>(client, 'lockRow', [id])
      writableRow(id, current, ifMatch)
      const { rows: [row] } = await run<PlantRow>(client, statement, values)
      return toPlant(row as PlantRow)
    })
  }

  let closed = false

  return {
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

    async create (plant: NewPlant, idempotency?: IdempotencyKey): Promise<CreateResult> {
      return await guard(async () => {
        const now = Date.now()
        if (idempotency === undefined) return { plant: toPlant(await insert(pool, plant, now)), replayed: false }
        const { scope, key, fingerprint } = idempotency
        // The key is written with the plant, in one transaction: both or neither.
        return await inTransaction(pool, async (client) => {
          await run(client, 'lockKey', [`${scope}\n${key}`])
          const { rows: [earlier] } = await run<IdempotencyRow>(client, 'findKey', [scope, key, now - IDEMPOTENCY_TTL_MS])
          if (earlier !== undefined) {
            if (earlier.fingerprint !== fingerprint) throw idempotencyKeyReused()
            return { plant: rememberedPlant(earlier), replayed: true }
          }
          await run(client, 'expireKeys', [now - IDEMPOTENCY_TTL_MS])
          const row = await insert(client, plant, now)
          await run(client, 'saveKey', [scope, key, fingerprint, row.id, row.name, row.tag, row.created_at, row.updated_at])
          return { plant: toPlant(row), replayed: false }
        })
      })
    },

    async replace (id: bigint, { name, tag }: Omit<NewPlant, 'id'>, ifMatch?: IfMatch) {
      return await guard(async () => await write(id, 'update', [id, name, tag ?? null, true, Date.now()], ifMatch))
    },

    async update (id: bigint, changes: PlantChanges, ifMatch?: IfMatch) {
      const values = [id, changes.name ?? null, changes.tag ?? null, changes.tag !== undefined, Date.now()]
      return await guard(async () => await write(id, 'update', values, ifMatch))
    },

    async delete (id: bigint, ifMatch?: IfMatch) {
      return await guard(async () => await write(id, 'delete', [id], ifMatch))
    },

    async close () {
      if (closed) return
      closed = true
      await pool.end()
    }
  }
}
