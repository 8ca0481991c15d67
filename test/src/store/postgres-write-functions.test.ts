import assert from 'node:assert/strict'
import { test } from 'node:test'
import pg from 'pg'
import { ServiceError } from '../../../src/lib/errors.js'
import { PLANTS, plantJson } from '../../../src/resources/plants.js'
import type { Plant } from '../../../src/resources/plants.js'
import type { Store } from '../../../src/store/contract.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { allWriteFunctions, callSql, sqlLiteral, writeFunctions } from '../../../src/store/postgres/write-functions.js'
import { eventPayload } from '../../../src/webhooks/events.js'
import { RESOURCE_EVENT_TYPES } from '../../helpers/resources.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { settled } from './conformance.js'

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

test('a call\'s literals: typed, quoted where they must be, never a NUL (the simple protocol would ' +
  'end the text there)', () => {
  assert.equal(sqlLiteral(null, 'text'), 'NULL::text')
  assert.equal(sqlLiteral(-9223372036854775808n, 'bigint'), '\'-9223372036854775808\'::bigint')
  assert.equal(sqlLiteral(false, 'boolean'), 'false::boolean')
  assert.equal(sqlLiteral(-1.5, 'double precision'), '\'-1.5\'::double precision')
  assert.equal(sqlLiteral(Number.NaN, 'double precision'), '\'NaN\'::double precision')
  assert.equal(sqlLiteral('it\'s', 'text'), '\'it\'\'s\'::text')
  assert.equal(sqlLiteral('a\\b', 'text'), ' E\'a\\\\b\'::text')
  assert.throws(() => sqlLiteral('a\0b', 'text'), RangeError)
  assert.throws(() => sqlLiteral({}, 'text'), TypeError)
})

test('the functions are named for their definition: another schema or body is another name', () => {
  const [create, remove] = allWriteFunctions([PLANTS], 'one')
  assert.match(create?.name ?? '', /^one\.ps_create_plants_[0-9a-f]{16}$/)
  assert.match(remove?.name ?? '', /^one\.ps_delete_plants_[0-9a-f]{16}$/)
  const [, , update, deleteRead] = allWriteFunctions([PLANTS], 'one')
  assert.match(update?.name ?? '', /^one\.ps_update_plants_[0-9a-f]{16}$/)
  assert.match(deleteRead?.name ?? '', /^one\.ps_delete_read_plants_[0-9a-f]{16}$/)
  assert.deepEqual(allWriteFunctions([PLANTS], 'one').map(({ name }) => name),
    [create?.name, remove?.name, update?.name, deleteRead?.name])
  const other = writeFunctions(PLANTS, 'two')
  assert.notEqual(other.create.name.slice(4), create?.name.slice(4))
})

if (TEST_DATABASE_URL !== undefined) {
  /** Every payload the subscription's deliveries carry, oldest first. */
  const payloads = async (store: Store): Promise<string[]> =>
    (await store.webhooks.claimDue({
      lease: 'check', now: Date.now() + 1000, leaseMs: 60_000, limit: 100, perSubscription: 100, skipSubscriptions: []
    })).map((delivery) => delivery.payload)

  test('PostgreSQL: a create and a delete in one call each send the very bytes JavaScript makes ' +
    'of the plant', async (t) => {
    const { url } = scratchDatabaseUrl(t)
    const store = await createPostgresStore({ url, poolMax: 2 })
    t.after(() => store.close())
    await store.webhooks.createSubscription({
      owner: 'owner-a',
      url: 'https://receiver.example/hook',
      events: [...RESOURCE_EVENT_TYPES],
      disabled: false,
      secret: SECRET
    }, Date.now())
    const names = ['it\'s "quoted"', 'back\\slash E\'x\'', 'line\nbreak\ttab \u0001 \u007f', 'é 😀 \u2028 \u2029',
      '$plant_store$']
    const created: Plant[] = []
    for (const [i, name] of names.entries()) {
      const { item } = await store.plants.create({ name, ...(i % 2 === 0 && { tag: `${name} tag` }) })
      assert.equal(item.name, name)
      assert.equal(item.tag, i % 2 === 0 ? `${name} tag` : undefined)
      assert.deepEqual(await store.plants.get(item.id), item, 'stored as given')
      created.push(item)
    }
    const deleted: Plant[] = []
    for (const plant of created) deleted.push(await store.plants.delete(plant.id))
    assert.deepEqual(deleted, created, 'a delete answers the plant as it was')
    const expected = [...created.map((plant) => ['plant.created', plant] as const),
      ...deleted.map((plant) => ['plant.deleted', plant] as const)]
    const sent = await payloads(store)
    assert.equal(sent.length, expected.length)
    for (const [i, [type, plant]] of expected.entries()) {
      const timestamp = (JSON.parse(sent[i] ?? '') as { timestamp: string }).timestamp
      assert.equal(sent[i], eventPayload(type, plantJson(plant), Date.parse(timestamp)))
    }
    for (const plant of created) assert.equal(await settled(store.plants.delete(plant.id)), 'not-found')
  })

  test('PostgreSQL: a create and a delete in one call are bounded by the store\'s lock_timeout, as its ' +
    'transactions are', { timeout: 20_000 }, async (t) => {
    const cleanup = cleanupStack(t)
    const { url, schema } = scratchDatabaseUrl(cleanup)
    const store = await createPostgresStore({ url, poolMax: 2, statementTimeoutMs: 300 })
    cleanup.after(() => store.close())
    const { item } = await store.plants.create({ name: 'Monstera' })
    const locker = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await locker.connect()
    cleanup.after(async () => { await locker.end() })
    await locker.query('BEGIN')
    await locker.query(`LOCK TABLE ${schema}.plants IN ACCESS EXCLUSIVE MODE`)
    // Unbounded on the server, each would wait for the lock until the driver's bound (a second more),
    // which fails the request without a code of PostgreSQL's, and leaves the statement waiting there.
    const boundedByServer = (err: unknown): boolean => err instanceof ServiceError && err.code === 'unavailable' &&
      ['55P03', '57014'].includes(String((err.cause as { code?: unknown } | undefined)?.code))
    await assert.rejects(store.plants.create({ name: 'Fern' }), boundedByServer)
    await assert.rejects(store.plants.delete(item.id), boundedByServer)
    await locker.query('ROLLBACK')
    assert.deepEqual(await store.plants.delete(item.id), item)
    const { rows } = await locker.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.plants`)
    assert.deepEqual(rows, [{ n: '0' }], 'the refused create wrote nothing')
  })

  test('PostgreSQL: a write of a row as read is made only while the row is as read: not once it ' +
    'changed, nor once it was deleted and made again with its id and times but other values', async (t) => {
    const { url, schema } = scratchDatabaseUrl(t)
    const store = await createPostgresStore({ url, poolMax: 1 })
    t.after(() => store.close())
    const { update, deleteRead } = writeFunctions(PLANTS, schema)
    const { item } = await store.plants.create({ name: 'Fern', tag: 'green' })
    const [row] = await adminQuery<{ created_at: string, updated_at: string }>(
      `SELECT created_at::text, updated_at::text FROM ${schema}.plants WHERE id = $1`, [item.id])
    const [createdAt, updatedAt] = [BigInt(row?.created_at ?? ''), BigInt(row?.updated_at ?? '')]
    const event = (payload: string): unknown[] =>
      [['msg_1'], 'plant.updated', [payload], 1, [null], [null], false, 'plant']
    const read = (name: string, tag: string | null): unknown[] => [[item.id], [createdAt], [updatedAt], [name], [tag]]
    const written = async (sql: string): Promise<number> => (await adminQuery(sql)).length
    const palm = (asRead: unknown[]): string =>
      callSql(update, [['Palm'], [null], ...asRead, [updatedAt + 1n], ...event('{}')])
    assert.equal(await written(palm(read('Fern', null))), 0, 'a value not as read')
    const older = read('Fern', 'green').map((value, i) => i === 2 ? [updatedAt - 1n] : value)
    assert.equal(await written(callSql(deleteRead, [...older, ...event('{}')])), 0, 'updated_at not as read')
    await adminQuery(`UPDATE ${schema}.plants SET name = 'Other' WHERE id = $1`, [item.id])
    assert.equal(await written(callSql(deleteRead, [...read('Fern', 'green'), ...event('{}')])), 0,
      'deleted and made again with its id and times')
    assert.equal(await written(palm(read('Other', 'green'))), 1, 'as read')
    assert.deepEqual(await adminQuery(`SELECT name, tag, updated_at::text FROM ${schema}.plants WHERE id = $1`,
      [item.id]), [{ name: 'Palm', tag: null, updated_at: String(updatedAt + 1n) }])
  })

  test('PostgreSQL: the functions are made when missing (a schema of the release before), left ' +
    'alone when there', async (t) => {
    const { url, schema } = scratchDatabaseUrl(t)
    const functions = async (): Promise<Array<{ name: string, oid: number }>> => await adminQuery(
      `SELECT p.proname AS name, p.oid::integer AS oid FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = $1 ORDER BY p.proname`, [schema])
    const first = await createPostgresStore({ url, poolMax: 1 })
    await first.close()
    const made = await functions()
    assert.deepEqual(made.map(({ name }) => `${schema}.${name}`),
      allWriteFunctions([PLANTS], schema).map(({ name }) => name).sort())
    const again = await createPostgresStore({ url, poolMax: 1 })
    t.after(() => again.close())
    assert.deepEqual(await functions(), made, 'not made again')
    await adminQuery(made.map(({ name }) => `DROP FUNCTION ${schema}.${name}`).join('; '))
    const upgraded = await createPostgresStore({ url, poolMax: 1 })
    t.after(() => upgraded.close())
    assert.deepEqual((await functions()).map(({ name }) => name), made.map(({ name }) => name))
    const { item } = await upgraded.plants.create({ name: 'Fern' })
    assert.deepEqual(await again.plants.delete(item.id), item)
  })
}
