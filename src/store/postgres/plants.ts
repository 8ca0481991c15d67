import type pg from 'pg'
import { idsExhausted, idTaken } from '../../errors.js'
import type { Plant } from '../../schemas/plant.js'
import { resourceEvent, type EventOrigin } from '../../webhooks/events.js'
import type { CreateResult } from '../../resource.js'
import {
  PLANT_COLUMNS, PLANTS, plantJsonAfterId, rememberedPlant, toPlant, type IdempotencyRow, type NewPlant, type PlantRepository, type PlantRow
} from '../../resources/plants.js'
import { isoTime } from '../iso-time.js'
import { createOnce, drawFreeId, writableRow } from '../rules.js'
import { MAX_ASSIGNED_ID, type IdempotencyKey, type IfMatch } from '../store.js'
import { inTransaction, statementRunner, tablePrefix, type RunStatement } from './connection.js'
import type { PostgresRepositoryContext } from './repository.js'
import { writeWithEventSql, postgresEventValues } from './webhook-store.js'

type Queryable = pg.Pool | pg.PoolClient

const SEQUENCE_LIMIT_EXCEEDED = '2200H'

/** nextval fails (2200H) past MAXVALUE 2^53 - 1 instead of going on. */
const insertGenerated = (t: string): string => `INSERT INTO ${t}plants (id, name, tag, created_at, updated_at)
                    SELECT next.id, $1, $2, $3, $3 FROM (SELECT nextval('${t}plants_id_seq') AS id) AS next
                    WHERE NOT EXISTS (SELECT 1 FROM ${t}chosen_ids WHERE chosen_ids.id = next.id)
                    ON CONFLICT (id) DO NOTHING RETURNING ${PLANT_COLUMNS}`

/** The plants' statements on `schema`'s tables, each schema-qualified. */
const statements = (schema: string | undefined) => {
  const t = tablePrefix(schema)
  return {
    get: `SELECT ${PLANT_COLUMNS} FROM ${t}plants WHERE id = $1`,
    lockRow: `SELECT ${PLANT_COLUMNS} FROM ${t}plants WHERE id = $1 FOR UPDATE`,
    // Keyset pagination: a deep page costs what the first one does.
    list: `SELECT ${PLANT_COLUMNS} FROM ${t}plants WHERE id > $1 ORDER BY id LIMIT $2`,
    listByTag: `SELECT ${PLANT_COLUMNS} FROM ${t}plants WHERE tag = $3 AND id > $1 ORDER BY id LIMIT $2`,
    // A chosen id the sequence has yet to reach is remembered, so the sequence skips it even after it is deleted.
    insertChosen: `WITH plant AS (
                     INSERT INTO ${t}plants (id, name, tag, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
                     ON CONFLICT (id) DO NOTHING RETURNING ${PLANT_COLUMNS}),
                   noted AS (
                     INSERT INTO ${t}chosen_ids (id)
                     SELECT plant.id FROM plant, ${t}plants_id_seq
                     WHERE plant.id > (CASE WHEN is_called THEN last_value ELSE last_value - 1 END)
                       AND plant.id <= ${MAX_ASSIGNED_ID}
                     ON CONFLICT (id) DO NOTHING)
                   SELECT ${PLANT_COLUMNS} FROM plant`,
    insertGenerated: insertGenerated(t),
    createGenerated: writeWithEventSql(schema, insertGenerated(t), PLANT_COLUMNS, 4),
    // Draw the sequence past the run of taken ids with nextval: setval could move it back under a
    // concurrent draw and hand out an id twice.
    skipTaken: `WITH RECURSIVE walk (id) AS (
                  SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM ${t}plants_id_seq
                  UNION ALL
                  SELECT walk.id + 1 FROM walk
                  WHERE walk.id <= ${MAX_ASSIGNED_ID}
                    AND (EXISTS (SELECT 1 FROM ${t}plants WHERE plants.id = walk.id)
                         OR EXISTS (SELECT 1 FROM ${t}chosen_ids WHERE chosen_ids.id = walk.id))),
                free AS (SELECT max(id) AS id FROM walk),
                drawn AS (
                  SELECT count(nextval('${t}plants_id_seq')) AS n
                  FROM free, ${t}plants_id_seq, generate_series(1, free.id - 1 - (CASE WHEN is_called THEN last_value ELSE last_value - 1 END))),
                forgotten AS (DELETE FROM ${t}chosen_ids USING free WHERE chosen_ids.id < free.id)
                SELECT n FROM drawn`,
    // updated_at strictly increases; a write that changes nothing keeps the row as it is (same ETag, no event).
    update: `WITH current AS (SELECT ${PLANT_COLUMNS} FROM ${t}plants WHERE id = $1 FOR UPDATE),
                  changed AS (
                    UPDATE ${t}plants SET name = coalesce($2, name), tag = CASE WHEN $4::boolean THEN $3 ELSE tag END,
                                      updated_at = greatest($5, updated_at + 1)
                    WHERE id = $1 AND (name <> coalesce($2, name) OR ($4::boolean AND tag IS DISTINCT FROM $3))
                    RETURNING ${PLANT_COLUMNS})
             SELECT ${PLANT_COLUMNS}, true AS changed FROM changed
             UNION ALL SELECT ${PLANT_COLUMNS}, false AS changed FROM current WHERE NOT EXISTS (SELECT 1 FROM changed)`,
    delete: `DELETE FROM ${t}plants WHERE id = $1 RETURNING ${PLANT_COLUMNS}`,
    // Same-key creates queue behind each other, so exactly one of them creates.
    lockKey: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))',
    findKey: `SELECT fingerprint, plant_id, name, tag, created_at, updated_at FROM ${t}idempotency_keys WHERE scope = $1 AND key = $2 AND created_at > $3`,
    saveKey: `INSERT INTO ${t}idempotency_keys (scope, key, fingerprint, plant_id, name, tag, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
              ON CONFLICT (scope, key) DO UPDATE SET fingerprint = $3, plant_id = $4, name = $5, tag = $6,
                                                    created_at = $7, updated_at = $8`,
    // Rows another instance is deleting are skipped, never waited for.
    expireKeys: `DELETE FROM ${t}idempotency_keys WHERE (scope, key) IN (
                   SELECT scope, key FROM ${t}idempotency_keys WHERE created_at <= $1 LIMIT 100 FOR UPDATE SKIP LOCKED)`
  } as const
}

type Run = RunStatement<keyof ReturnType<typeof statements>>

/** A server-assigned id, drawn past the taken ones; past 2^53 - 1 `ids-exhausted`. */
async function withGeneratedId<T> (run: Run, attempt: () => Promise<T | undefined>, db: Queryable): Promise<T> {
  try {
    return await drawFreeId(attempt, async () => await run(db, 'skipTaken'))
  } catch (err) {
    if ((err as { code?: unknown }).code === SEQUENCE_LIMIT_EXCEEDED) throw idsExhausted(PLANTS)
    throw err
  }
}

async function insertRow (run: Run, db: Queryable, { id, name, tag }: NewPlant, now: number): Promise<PlantRow> {
  if (id === undefined) {
    return await withGeneratedId(run, async () => (await run<PlantRow>(db, 'insertGenerated', [name, tag ?? null, now])).rows[0], db)
  }
  const { rows: [row] } = await run<PlantRow>(db, 'insertChosen', [id, name, tag ?? null, now])
  if (row === undefined) throw idTaken(PLANTS, id)
  return row
}

/** A keyed or chosen-id create: a transaction, with the key's lock, the replay rule and the event. */
async function createInTransaction (
  run: Run, context: PostgresRepositoryContext, plant: NewPlant, key: IdempotencyKey | undefined, origin: EventOrigin | undefined, admit: (() => void) | undefined
): Promise<CreateResult<Plant>> {
  const now = Date.now()
  let deliveries = 0
  const result = await inTransaction(context.pool, async (client) => await createOnce(key, now, {
    findKey: async ({ scope, key }, cutoff) => {
      await run(client, 'lockKey', [`${scope}\n${key}`])
      return (await run<IdempotencyRow>(client, 'findKey', [scope, key, cutoff])).rows[0]
    },
    remembered: rememberedPlant,
    expireKeys: async (cutoff) => await run(client, 'expireKeys', [cutoff]),
    insert: async () => await insertRow(run, client, plant, now),
    saveKey: async ({ scope, key, fingerprint }, row) => await run(client, 'saveKey', [scope, key, fingerprint, row.id, row.name, row.tag, row.created_at, row.updated_at]),
    created: async (row) => {
      const created = toPlant(row)
      deliveries = await context.enqueue(client, resourceEvent(PLANTS, 'created', created, now, origin), now, context.claimNotify(now))
      return created
    }
  }, admit))
  return context.afterCommit(result, deliveries)
}

/** The usual create, without key or chosen id: the plant and its event in one statement, one round trip. */
async function createGenerated (run: Run, { pool, claimNotify, afterCommit }: PostgresRepositoryContext, { name, tag }: NewPlant, origin: EventOrigin | undefined): Promise<CreateResult<Plant>> {
  const now = Date.now()
  const at = isoTime(now)
  const event = postgresEventValues(PLANTS, 'created', plantJsonAfterId({ name, ...(tag !== undefined && { tag }), createdAt: at, updatedAt: at }), now, origin, claimNotify(now))
  const row = await withGeneratedId(run, async () => (await run<PlantRow & { deliveries: number }>(pool, 'createGenerated', [name, tag ?? null, now, ...event])).rows[0], pool)
  return afterCommit({ item: toPlant(row), replayed: false }, row.deliveries)
}

/** An update or delete with its precondition and event, in one transaction. */
async function writeRow (run: Run, context: PostgresRepositoryContext, id: bigint, statement: 'update' | 'delete', values: (now: number) => unknown[], ifMatch: IfMatch | undefined, origin: EventOrigin | undefined): Promise<Plant> {
  const now = Date.now()
  let deliveries = 0
  const plant = await inTransaction(context.pool, async (client) => {
    if (ifMatch !== undefined) writableRow(PLANTS, id, (await run<PlantRow>(client, 'lockRow', [id])).rows[0], ifMatch, toPlant)
    const { rows: [row] } = await run<PlantRow & { changed?: boolean }>(client, statement, values(now))
    const changed = toPlant(writableRow(PLANTS, id, row, undefined, toPlant))
    if (row?.changed === false) return changed
    const event = resourceEvent(PLANTS, statement === 'delete' ? 'deleted' : 'updated', changed, now, origin)
    deliveries = await context.enqueue(client, event, now, context.claimNotify(now))
    return changed
  })
  return context.afterCommit(plant, deliveries)
}

/** The plants repository on PostgreSQL. */
export function createPostgresPlants (context: PostgresRepositoryContext): PlantRepository {
  const { pool, guard } = context
  const run: Run = statementRunner(statements(context.schema))
  return {
    async list ({ limit, after, tag }) {
      const { rows } = await guard(async () => tag === undefined
        ? await run<PlantRow>(pool, 'list', [after ?? 0n, limit + 1])
        : await run<PlantRow>(pool, 'listByTag', [after ?? 0n, limit + 1, tag]))
      return { items: rows.slice(0, limit).map(toPlant), hasMore: rows.length > limit }
    },
    async get (id) {
      const { rows: [row] } = await guard(async () => await run<PlantRow>(pool, 'get', [id]))
      return row === undefined ? undefined : toPlant(row)
    },
    async create (plant, key, origin, admit) {
      // Without a key nothing can be replayed: admit before the one-statement create.
      if (key === undefined && plant.id === undefined) admit?.()
      return await guard(async () => key === undefined && plant.id === undefined
        ? await createGenerated(run, context, plant, origin)
        : await createInTransaction(run, context, plant, key, origin, admit))
    },
    async replace (id, { name, tag }, ifMatch, origin) {
      return await guard(async () => await writeRow(run, context, id, 'update', (now) => [id, name, tag ?? null, true, now], ifMatch, origin))
    },
    async update (id, changes, ifMatch, origin) {
      const values = (now: number): unknown[] => [id, changes.name ?? null, changes.tag ?? null, changes.tag !== undefined, now]
      return await guard(async () => await writeRow(run, context, id, 'update', values, ifMatch, origin))
    },
    async delete (id, ifMatch, origin) {
      return await guard(async () => await writeRow(run, context, id, 'delete', () => [id], ifMatch, origin))
    }
  }
}
