import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ServiceError } from '../../../src/lib/errors.js'
import { createOnce, IDEMPOTENCY_TTL_MS, settled, type CreateSteps } from '../../../src/store/rules.js'
import type { IdempotencyKey } from '../../../src/resources/idempotency.js'

const KEY: IdempotencyKey = { scope: 'principal', key: 'k', fingerprint: 'body-1' }
const NOW = 1_000_000_000

/** Steps that record their calls, as a store's would run them; `earlier` is the key's row when it exists. */
function recorded (earlier?: { fingerprint: string, item: string },
  wrap: <T>(value: T) => T | Promise<T> = (value) => value) {
  const calls: string[] = []
  const steps: CreateSteps<{ fingerprint: string, item: string }, string, string> = {
    findKey: (key, cutoff) => { calls.push(`find ${key.key} ${cutoff}`); return wrap(earlier) },
    remembered: (row) => row.item,
    expireKeys: (cutoff) => { calls.push(`expire ${cutoff}`); return wrap(undefined) },
    insert: () => { calls.push('insert'); return wrap('row') },
    saveKey: (key, row) => { calls.push(`save ${key.key} ${row}`); return wrap(undefined) },
    created: (row) => { calls.push(`created ${row}`); return wrap(`item of ${row}`) }
  }
  return { calls, steps }
}

test('without a key, a create inserts and makes its item: nothing is looked up, expired or saved', () => {
  const { calls, steps } = recorded()
  assert.deepEqual(settled(createOnce(undefined, NOW, steps)), { item: 'item of row', replayed: false })
  assert.deepEqual(calls, ['insert', 'created row'])
})

test('with a new key: find it (keys created at or before the cutoff are expired), expire, insert, ' +
  'save, then the event', () => {
  const { calls, steps } = recorded()
  assert.deepEqual(settled(createOnce(KEY, NOW, steps)), { item: 'item of row', replayed: false })
  const cutoff = NOW - IDEMPOTENCY_TTL_MS
  assert.deepEqual(calls, [`find k ${cutoff}`, `expire ${cutoff}`, 'insert', 'save k row', 'created row'])
})

test('a key seen with the same body replays what it created; with another body it is refused, ' +
  'and nothing is written', () => {
  const same = recorded({ fingerprint: 'body-1', item: 'first' })
  assert.deepEqual(settled(createOnce(KEY, NOW, same.steps)), { item: 'first', replayed: true })
  assert.equal(same.calls.length, 1)
  const other = recorded({ fingerprint: 'body-2', item: 'first' })
  assert.throws(() => createOnce(KEY, NOW, other.steps),
    (err: unknown) => err instanceof ServiceError && err.code === 'idempotency-key-reused')
  assert.equal(other.calls.length, 1)
})

test('admit runs only for a new create, before anything is written; a replay is not asked, a ' +
  'refusal writes nothing', () => {
  const refuse = (): void => { throw new Error('full') }
  const replay = recorded({ fingerprint: 'body-1', item: 'first' })
  assert.deepEqual(settled(createOnce(KEY, NOW, replay.steps, refuse)), { item: 'first', replayed: true })
  const keyed = recorded()
  assert.throws(() => createOnce(KEY, NOW, keyed.steps, refuse), /full/)
  assert.deepEqual(keyed.calls.map((call) => call.split(' ')[0]), ['find'])
  const bare = recorded()
  assert.throws(() => createOnce(undefined, NOW, bare.steps, refuse), /full/)
  assert.deepEqual(bare.calls, [])
  const admitted = recorded()
  const order: string[] = []
  settled(createOnce(KEY, NOW,
    { ...admitted.steps, expireKeys: (cutoff) => { order.push('expire'); return admitted.steps.expireKeys(cutoff) } },
    () => { order.push('admit') }))
  assert.deepEqual(order, ['admit', 'expire'])
})

test('asynchronous steps run in the same order, each after the last has settled', async () => {
  const { calls, steps } = recorded(undefined,
    async (value) => await new Promise((resolve) => setImmediate(() => resolve(value))))
  const result = createOnce(KEY, NOW, steps)
  assert.ok(result instanceof Promise)
  assert.deepEqual(await result, { item: 'item of row', replayed: false })
  assert.deepEqual(calls.map((call) => call.split(' ')[0]), ['find', 'expire', 'insert', 'save', 'created'])
  // A synchronous store cannot take such steps: they would run after its transaction.
  assert.throws(() => settled(Promise.resolve(1)), /returned a promise/)
})
