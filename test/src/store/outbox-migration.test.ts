import assert from 'node:assert/strict'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { migrations as postgresMigrations } from '../../../src/store/postgres/migrations.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { migrations } from '../../../src/store/sqlite/migrations.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import type { Store } from '../../../src/store/contract.js'
import { WebhookDispatcher } from '../../../src/webhooks/dispatcher.js'
import { cleanupStack, type Cleanup } from '../../helpers/cleanup.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { sqliteFromDump } from '../../helpers/sqlite-dump.js'
import { startReceiver, until, verifyWebhook, type WebhookReceiver } from '../../helpers/webhook-receiver.js'

/**
 * test/fixtures/release-1.0.0-outbox.sql is the dump of a database written by the release before the outbox held
 * payloads (schema version 9): a subscription, then four plant writes whose events wait in the outbox as
 * plant columns. The bodies below are what that release's code made of those rows at fan-out.
 */
const OWNER = 'a'.repeat(64)
const RELEASE_BODIES: ReadonlyArray<[messageId: string, body: string]> = [
  ['msg_hUcwuqW6YAehbyXKB4DNuw',
    '{"type":"plant.created","timestamp":"2026-11-26T04:09:44.356Z","data":{"id":1,"name":"Monstera",' +
      '"tag":"tropical","createdAt":"2026-11-26T04:09:44.356Z","updatedAt":"2026-11-26T04:09:44.356Z"}}'],
  ['msg_FXEfBfuKCWBm5DBbFZmGmw',
    '{"type":"plant.created","timestamp":"2026-11-26T04:09:44.363Z","data":{"id":2,"name":"Fern ' +
      '\\"Ü\u2028\\"","createdAt":"2026-11-26T04:09:44.363Z","updatedAt":"2026-11-26T04:09:44.363Z"}}'],
  ['msg_ZaC1kcxY-35mbPfshPdbdA',
    '{"type":"plant.updated","timestamp":"2026-11-26T04:09:44.368Z","data":{"id":1,"name":"Monstera ' +
      'deliciosa","createdAt":"2026-11-26T04:09:44.356Z","updatedAt":"2026-11-26T04:09:44.368Z"}}'],
  ['msg_XSxKVJMcX08L5ViJojd4Dw',
    '{"type":"plant.deleted","timestamp":"2026-11-26T04:09:44.373Z","data":{"id":2,"name":"Fern ' +
      '\\"Ü\u2028\\"","createdAt":"2026-11-26T04:09:44.363Z","updatedAt":"2026-11-26T04:09:44.363Z"}}']
]

/** The release's database, rebuilt from its dump. */
const releaseFile = (): string => sqliteFromDump('release-1.0.0-outbox.sql', 'plant-store-outbox-')

/** Points the release's subscription at a loopback receiver and starts a dispatcher on the store. */
async function deliverTo (cleanup: Cleanup, store: Store): Promise<WebhookReceiver> {
  const receiver = await startReceiver(cleanup)
  assert.ok(await store.webhooks.updateSubscription(OWNER, 1n, { url: `${receiver.origin}/hook` }, Date.now()))
  const dispatcher = new WebhookDispatcher({
    store: store.webhooks,
    policy: { allowPrivate: true, resolve: async () => { throw new Error('no DNS in this test') } },
    pollIntervalMs: 20,
    jitter: 0
  })
  cleanup.after(async () => { await dispatcher.stop(0) })
  await dispatcher.start()
  return receiver
}

test('SQLite: a file of the previous release keeps its pending events, with the bytes that ' +
  'release would have sent', async (t) => {
  const file = releaseFile()
  const before = new Database(file, { readonly: true })
  assert.equal(before.pragma('user_version', { simple: true }), 9)
  before.close()

  const cleanup = cleanupStack(t)
  const store = createSqliteStore({ filename: file })
  cleanup.after(async () => { await store.close() })
  const db = new Database(file, { readonly: true })
  cleanup.after(async () => { db.close() })
  assert.equal(db.pragma('user_version', { simple: true }), migrations.length)
  assert.deepEqual(db.prepare(
    'SELECT message_id, event_type, subject_type, subject_id, payload FROM webhook_events ORDER BY id').raw().all(), [
    [RELEASE_BODIES[0]?.[0], 'plant.created', 'plant', 1, RELEASE_BODIES[0]?.[1]],
    [RELEASE_BODIES[1]?.[0], 'plant.created', 'plant', 2, RELEASE_BODIES[1]?.[1]],
    [RELEASE_BODIES[2]?.[0], 'plant.updated', 'plant', 1, RELEASE_BODIES[2]?.[1]],
    [RELEASE_BODIES[3]?.[0], 'plant.deleted', 'plant', 2, RELEASE_BODIES[3]?.[1]]
  ])
  assert.deepEqual(db.prepare('PRAGMA table_info(webhook_events)').all().map(
    (column) => (column as { name: string }).name),
  ['id', 'message_id', 'event_type', 'created_at', 'request_id', 'traceparent', 'subject_type', 'subject_id',
    'payload'])

  // Delivered as that release would have: same webhook-ids, same bodies, and the request id kept.
  const receiver = await deliverTo(cleanup, store)
  await until('the four pending events delivered', () => receiver.requests.length === 4)
  assert.deepEqual(receiver.requests.map((request) => [request.headers['webhook-id'], request.body]), RELEASE_BODIES)
  const { secret } = await store.webhooks.getSubscription(OWNER, 1n) ?? assert.fail('subscription')
  for (const request of receiver.requests) verifyWebhook(secret, request)

  // The new event of a later write sits beside them in the same shape, after the old ids.
  await store.plants.create({ name: 'Pilea' })
  await until('the new event delivered', () => receiver.requests.length === 5)
  assert.match(receiver.requests[4]?.body ?? '',
    /^\{"type":"plant\.created","timestamp":"[^"]+","data":\{"id":3,"name":"Pilea",/)
})

if (TEST_DATABASE_URL !== undefined) {
  test('PostgreSQL: events written before the outbox held subjects get theirs from their payload, ' +
    'and are delivered unchanged', async (t) => {
    const { url, schema } = scratchDatabaseUrl(t)
    const released = postgresMigrations.slice(0, 8).map((step) => step.up)
    const [messageId, body] = RELEASE_BODIES[2] ?? assert.fail('body')
    await adminQuery(`CREATE SCHEMA ${schema}; SELECT set_config('search_path', '${schema}', true);
      ${released.join(';\n')};
      CREATE TABLE plant_store_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
      INSERT INTO plant_store_migrations (version) SELECT generate_series(1, ${released.length});
      INSERT INTO webhook_subscriptions (owner, url, events, disabled, secret, created_at, updated_at, first_event_id)
      VALUES ('${OWNER}', 'http://127.0.0.1:9/hook', '{plant.updated}', false,
        'whsec_${Buffer.alloc(32, 7).toString('base64')}', 0, 0, 1);
      INSERT INTO webhook_events (message_id, event_type, payload, created_at)
      VALUES ('${messageId}', 'plant.updated', '${body}', 0)`)
    const cleanup = cleanupStack(t)
    const store = await createPostgresStore({ url })
    cleanup.after(async () => { await store.close() })
    const rows = await adminQuery(`SELECT subject_type, subject_id::text, payload FROM ${schema}.webhook_events`)
    assert.deepEqual(rows, [{ subject_type: 'plant', subject_id: '1', payload: body }])

    const receiver = await deliverTo(cleanup, store)
    await until('the pending event delivered', () => receiver.requests.length === 1)
    assert.deepEqual(receiver.requests.map((request) => [request.headers['webhook-id'], request.body]),
      [[messageId, body]])
  })
}
