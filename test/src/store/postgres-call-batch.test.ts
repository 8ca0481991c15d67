import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import pg from 'pg'
import { plantJson, type Plant } from '../../../src/resources/plants.js'
import type { Store } from '../../../src/store/contract.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { callBatch } from '../../../src/store/postgres/call-batch.js'
import { isConnectionError } from '../../../src/store/postgres/connection.js'
import { RoundTripCounter } from '../../../bench/postgres.js'
import { eventPayload } from '../../../src/webhooks/events.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { settled } from './conformance.js'
import { RESOURCE_EVENT_TYPES } from '../../helpers/resources.js'

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

/** A run whose calls the test ends one by one: each call's inputs, and how to answer it. */
function heldRun (): {
  calls: Array<{ inputs: readonly string[], answer: (fail?: Error) => void }>
  run: (inputs: readonly string[]) => Promise<readonly string[]>
} {
  const calls: Array<{ inputs: readonly string[], answer: (fail?: Error) => void }> = []
  const run = async (inputs: readonly string[]): Promise<readonly string[]> =>
    await new Promise((resolve, reject) => {
      calls.push({
        inputs, answer: (fail) => { fail === undefined ? resolve(inputs.map((i) => `${i}!`)) : reject(fail) }
      })
    })
  return { calls, run }
}

const tick = async (): Promise<void> => { await new Promise((resolve) => setImmediate(resolve)) }

test('writes that arrive while two calls are under way share the next call, each answered from it, ' +
  'in order', async () => {
  const { calls, run } = heldRun()
  const batch = callBatch(run, { waitMs: 0 })
  const answers = ['a', 'b', 'c', 'd', 'e'].map(async (input) => await batch.submit(input))
  await tick()
  assert.deepEqual(calls.map(({ inputs }) => inputs), [['a'], ['b']])
  calls[1]?.answer()
  await tick()
  assert.deepEqual(calls.map(({ inputs }) => inputs), [['a'], ['b'], ['c', 'd', 'e']])
  calls[0]?.answer()
  calls[2]?.answer()
  assert.deepEqual(await Promise.all(answers), ['a!', 'b!', 'c!', 'd!', 'e!'])
})

test('a call takes at most 64 writes: the rest wait for the next call', async () => {
  const { calls, run } = heldRun()
  const batch = callBatch(run, { waitMs: 0 })
  const inputs = Array.from({ length: 72 }, (_, i) => String(i))
  const answers = inputs.map(async (input) => await batch.submit(input))
  await tick()
  calls[0]?.answer()
  calls[1]?.answer()
  await tick()
  assert.deepEqual(calls.map(({ inputs }) => inputs.length), [1, 1, 64, 6])
  assert.deepEqual(calls.flatMap(({ inputs }) => inputs), inputs)
  calls[2]?.answer()
  calls[3]?.answer()
  assert.deepEqual(await Promise.all(answers), inputs.map((input) => `${input}!`))
})

type HeldCalls = ReturnType<typeof heldRun>['calls']

/** Four writes: the first two each take a call of their own (answered), the last two wait to share the next. */
async function twoAnsweredOfFour (): Promise<{ calls: HeldCalls, answers: Array<Promise<string>> }> {
  const { calls, run } = heldRun()
  const batch = callBatch(run, { waitMs: 0 })
  const answers = ['a', 'b', 'c', 'd'].map(async (input) => await settledValue(batch.submit(input)))
  await tick()
  calls[0]?.answer()
  calls[1]?.answer()
  await tick()
  return { calls, answers }
}

test('a call of several that fails is made again write by write: only the failing write fails', async () => {
  const { calls, answers } = await twoAnsweredOfFour()
  assert.deepEqual(calls[2]?.inputs, ['c', 'd'])
  calls[2]?.answer(Object.assign(new Error('deadlock detected'), { code: '40P01' }))
  await tick()
  assert.deepEqual(calls.slice(3).map(({ inputs }) => inputs), [['c'], ['d']])
  calls[3]?.answer(new Error('c alone fails'))
  calls[4]?.answer()
  assert.deepEqual(await Promise.all(answers), ['a!', 'b!', 'c alone fails', 'd!'])
})

test('a call whose connection failed is never made again (its commit may have happened): each of ' +
  'its writes fails', async () => {
  const { calls, answers } = await twoAnsweredOfFour()
  calls[2]?.answer(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))
  assert.deepEqual(await Promise.all(answers), ['a!', 'b!', 'read ECONNRESET', 'read ECONNRESET'])
  assert.equal(calls.length, 3)
})

test('an input that waited for a call past the bound is answered as a checkout that waited too long (a 503), ' +
  'when the next input comes or a call ends; those waiting less go on to the next call', async () => {
  const { calls, run } = heldRun()
  let clock = 0
  const batch = callBatch(run, { waitMs: 100, now: () => clock })
  const outcome = async (input: string): Promise<unknown> => await batch.submit(input).catch((err: unknown) => err)
  const answers = ['a', 'b', 'c', 'd'].map(outcome)
  clock = 60
  answers.push(outcome('e'))
  clock = 100
  answers.push(outcome('f'))
  await tick()
  calls[0]?.answer()
  await tick()
  assert.deepEqual(calls.map(({ inputs }) => inputs), [['a'], ['b'], ['e', 'f']])
  calls[1]?.answer()
  calls[2]?.answer()
  const [a, b, c, d, e, f] = await Promise.all(answers)
  assert.deepEqual([a, b, e, f], ['a!', 'b!', 'e!', 'f!'])
  for (const refused of [c, d]) {
    assert.equal((refused as Error).message, 'timeout exceeded when trying to connect')
    assert.equal(isConnectionError(refused), true)
  }
})

async function settledValue (promise: Promise<string>): Promise<string> {
  return await promise.catch((err: Error) => err.message)
}

/** A PostgreSQL store of its own schema with one subscription to every event, so each write has its event. */
async function subscribedStore (t: TestContext): Promise<{ store: Store, schema: string }> {
  const { url, schema } = scratchDatabaseUrl(t)
  const store = await createPostgresStore({ url, poolMax: 4 })
  t.after(() => store.close())
  const events = [...RESOURCE_EVENT_TYPES]
  await store.webhooks.createSubscription(
    { owner: 'owner-a', url: 'https://receiver.example/hook', events, disabled: false, secret: SECRET }, Date.now())
  return { store, schema }
}

if (TEST_DATABASE_URL !== undefined) {
  test('PostgreSQL: concurrent creates and deletes, sharing calls, each get their own id, answer and ' +
    'event; a missing or repeated id fails only its own delete', async (t) => {
    const { store, schema } = await subscribedStore(t)
    const created = (await Promise.all(Array.from({ length: 40 }, async (_, i) =>
      await store.plants.create({ name: `plant "${i}"`, ...(i % 3 === 0 && { tag: `tag ${i}` }) }))))
      .map(({ item }) => item)
    assert.equal(new Set(created.map(({ id }) => id)).size, 40)
    for (const [i, plant] of created.entries()) {
      assert.deepEqual([plant.name, plant.tag], [`plant "${i}"`, i % 3 === 0 ? `tag ${i}` : undefined])
      assert.deepEqual(await store.plants.get(plant.id), plant)
    }
    const targets = [...created.map(({ id }) => id), 999_999n, created[0]?.id as bigint]
    const outcomes = await Promise.all(targets.map(async (id) => await settled(store.plants.delete(id))))
    assert.deepEqual(outcomes, [...created.map(() => 'ok'), 'not-found', 'not-found'])
    const written = await adminQuery<{ event_type: string, subject_id: string, payload: string, created_at: string }>(
      `SELECT event_type, subject_id::text, payload, created_at::text FROM ${schema}.webhook_events ORDER BY id`)
    const expected = [...created.map((plant) => ['plant.created', plant] as const),
      ...created.map((plant) => ['plant.deleted', plant] as const)]
    const key = (type: string, id: bigint): string => `${type} ${id}`
    const byKey = new Map(written.map((event) => [key(event.event_type, BigInt(event.subject_id)), event]))
    assert.equal(written.length, expected.length, 'one event a write')
    for (const [type, plant] of expected) {
      const event = byKey.get(key(type, plant.id))
      assert.equal(event?.payload, eventPayload(type, plantJson(plant as Plant), Number(event?.created_at)))
    }
  })

  test('PostgreSQL: concurrent reads share calls, each answered with its own row, undefined for a missing id, ' +
    'a repeated id\'s row twice: 22 reads in 3 round trips', async (t) => {
    const counter = await RoundTripCounter.start(TEST_DATABASE_URL as string)
    t.after(async () => { await counter.stop() })
    const { url } = scratchDatabaseUrl(t)
    const store = await createPostgresStore({ url: counter.url(url), poolMax: 4 })
    t.after(() => store.close())
    const created = (await Promise.all(Array.from({ length: 20 }, async (_, i) =>
      await store.plants.create({ name: `plant ${i}`, ...(i % 2 === 0 && { tag: `tag ${i}` }) }))))
      .map(({ item }) => item)
    const first = created[0] as Plant
    const before = counter.snapshot()
    const answers = await Promise.all([...created.map(({ id }) => id), 999_999n, first.id]
      .map(async (id) => await store.plants.get(id)))
    const after = counter.snapshot()
    assert.deepEqual(answers, [...created, undefined, first])
    // The first two each alone (two calls in flight), then the other twenty together.
    assert.equal(RoundTripCounter.exchanged(new Set(), before, after), 3)
  })

  test('PostgreSQL: a read that has waited PG_CONNECT_TIMEOUT_MS for a shared call is answered 503 as the next ' +
    'read comes, without joining one; the reads under way and the next are answered once they can be', async (t) => {
    const cleanup = cleanupStack(t)
    const { url, schema } = scratchDatabaseUrl(cleanup)
    const store = await createPostgresStore({ url, poolMax: 4, connectTimeoutMs: 100 })
    cleanup.after(() => store.close())
    const { item } = await store.plants.create({ name: 'Fern' })
    // Two connections open and idle: the two calls below take them at once, with no connect to wait for.
    await Promise.all([store.plants.get(item.id), store.plants.get(item.id)])
    const locker = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await locker.connect()
    cleanup.after(async () => { await locker.end() })
    await locker.query('BEGIN')
    await locker.query(`LOCK TABLE ${schema}.plants IN ACCESS EXCLUSIVE MODE`)
    // Each alone in a call, both blocked by the lock (statement bounds of seconds): the third waits for a call.
    const underWay = [store.plants.get(item.id), store.plants.get(item.id)]
    let third: string | undefined
    void settled(store.plants.get(item.id)).then((outcome) => { third = outcome })
    await new Promise((resolve) => setTimeout(resolve, 250))
    assert.equal(third, undefined, 'still waiting: nothing under way has ended')
    const next = store.plants.get(item.id)
    await tick()
    assert.equal(third, 'unavailable', 'answered as the next read came, past the bound')
    await locker.query('ROLLBACK')
    assert.deepEqual(await Promise.all([...underWay, next]), [item, item, item])
  })

  test('PostgreSQL: concurrent updates of one row without If-Match each write the row as it was read: ' +
    'every one answered, none lost, each event the row its update made', async (t) => {
    const { store, schema } = await subscribedStore(t)
    const { item } = await store.plants.create({ name: 'start', tag: 'a' })
    // Each update changes one field: an update made from a stale row would undo another's change.
    const answers = await Promise.all(Array.from({ length: 12 }, async (_, i) =>
      await store.plants.update(item.id, i % 2 === 0 ? { name: `name ${i}` } : { tag: `tag ${i}` })))
    const final = await store.plants.get(item.id)
    const last = answers.reduce((a, b) => Date.parse(a.updatedAt) >= Date.parse(b.updatedAt) ? a : b)
    assert.deepEqual(final, last, 'the row is the last update\'s answer')
    assert.equal(new Set(answers.map(({ updatedAt }) => updatedAt)).size, 12, 'each update a version of its own')
    const ordered = [...answers].sort((a, b) => Date.parse(a.updatedAt) - Date.parse(b.updatedAt))
    let expected = { name: 'start', tag: 'a' as string | undefined }
    for (const answer of ordered) {
      // Each answer is the one before it with one field changed: nothing another update wrote was undone.
      const changed = [answer.name !== expected.name, answer.tag !== expected.tag].filter(Boolean).length
      assert.equal(changed, 1, `${answer.name} ${String(answer.tag)} after ${expected.name} ${String(expected.tag)}`)
      expected = { name: answer.name, tag: answer.tag }
    }
    const written = await adminQuery<{ payload: string, created_at: string }>(
      `SELECT payload, created_at::text FROM ${schema}.webhook_events WHERE event_type = 'plant.updated' ORDER BY id`)
    assert.deepEqual(written.map(({ payload }) => (JSON.parse(payload) as { data: unknown }).data),
      ordered.map((plant) => JSON.parse(plantJson(plant)) as unknown))
  })
}
