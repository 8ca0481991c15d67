import assert from 'node:assert/strict'
import { test } from 'node:test'
import { migrations } from '../../../src/store/postgres/migrations.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import type { IdempotencyKey } from '../../../src/resources/idempotency.js'

/**
 * A schema of the release before idempotency keys and chosen ids were resource-neutral (version 10):
 * plants, keys remembering plants (one with a tag, one without), chosen ids ahead of the sequence (one
 * of whose plants is gone) and events in the outbox. Upgraded, every key replays exactly, every chosen
 * id is still skipped by the sequence and every event is still there.
 */
const RELEASED = migrations.slice(0, 10).map((step) => step.up)
/** Keys expire: these were stored just now. */
const NOW = Date.now()
const OLD_ROWS = `
  INSERT INTO plants (id, name, tag, created_at, updated_at) VALUES
    (1, 'Fern', 'green', ${NOW}, ${NOW + 5}), (2, 'Moss', NULL, ${NOW}, ${NOW}), (50, 'Chosen', NULL, ${NOW}, ${NOW});
  SELECT setval('plants_id_seq', 48);
  INSERT INTO chosen_ids (id) VALUES (50), (52);
  INSERT INTO idempotency_keys (scope, key, fingerprint, plant_id, name, tag, created_at, updated_at) VALUES
    ('token:a', 'key-1', 'fingerprint-1', 1, 'Fern', 'green', ${NOW}, ${NOW}),
    ('token:a', 'key-2', 'fingerprint-2', 2, 'Moss', NULL, ${NOW}, ${NOW}),
    ('token:b', 'key-1', 'fingerprint-3', 52, 'Gone', NULL, ${NOW - 1}, ${NOW - 1});
  INSERT INTO webhook_events (message_id, event_type, payload, created_at, subject_type, subject_id) VALUES
    ('msg_1', 'plant.created', '{"type":"plant.created","data":{"id":1}}', 1000, 'plant', 1),
    ('msg_2', 'plant.deleted', '{"type":"plant.deleted","data":{"id":52}}', 5000, 'plant', 52)`

const events = async (schema: string): Promise<unknown[]> => await adminQuery(
  `SELECT id, message_id, event_type, payload, created_at, subject_type, subject_id FROM ${schema}.webhook_events
   ORDER BY id`)

if (TEST_DATABASE_URL !== undefined) {
  test('PostgreSQL: a schema of the previous release keeps every key, chosen id and event (version 10 to the latest)',
    async (t) => {
      const cleanup = cleanupStack(t)
      const { url, schema } = scratchDatabaseUrl(cleanup)
      await adminQuery(`CREATE SCHEMA ${schema}; SET search_path TO ${schema};
        ${RELEASED.join(';\n')};
        CREATE TABLE plant_store_migrations (
          version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
        INSERT INTO plant_store_migrations (version) SELECT generate_series(1, ${RELEASED.length});
        ${OLD_ROWS}`)
      const before = await events(schema)
      assert.equal(before.length, 2)
      const store = await createPostgresStore({ url })
      cleanup.after(async () => { await store.close() })

      const key = (scope: string, key: string, fingerprint: string): IdempotencyKey => ({ scope, key, fingerprint })
      const fern = await store.plants.create({ name: 'Fern', tag: 'green' }, key('token:a', 'key-1', 'fingerprint-1'))
      const at = new Date(NOW).toISOString()
      assert.deepEqual(fern,
        { item: { id: 1n, name: 'Fern', tag: 'green', createdAt: at, updatedAt: at }, replayed: true },
        'the key replays the plant as first answered, not as it is now')
      const moss = await store.plants.create({ name: 'Moss' }, key('token:a', 'key-2', 'fingerprint-2'))
      assert.deepEqual(moss.item, { id: 2n, name: 'Moss', createdAt: at, updatedAt: at })
      assert.equal(moss.replayed, true)
      const gone = await store.plants.create({ name: 'Gone' }, key('token:b', 'key-1', 'fingerprint-3'))
      assert.deepEqual([gone.replayed, gone.item.id, gone.item.name], [true, 52n, 'Gone'], 'a key outlives its plant')
      await assert.rejects(store.plants.create({ name: 'Other' }, key('token:a', 'key-1', 'other')),
        { code: 'idempotency-key-reused' })

      const generated: bigint[] = []
      for (let i = 0; i < 3; i++) generated.push((await store.plants.create({ name: `generated ${i}` })).item.id)
      assert.deepEqual(generated, [49n, 51n, 53n], 'the chosen ids 50 (a plant) and 52 (deleted) are skipped')

      assert.deepEqual(await events(schema), before, 'every event is still there')
      const keys = await adminQuery<{ resource: string, n: number }>(
        `SELECT resource, count(*)::integer AS n FROM ${schema}.idempotency_keys GROUP BY resource`)
      assert.deepEqual(keys, [{ resource: 'plants', n: 3 }])
    })
}
