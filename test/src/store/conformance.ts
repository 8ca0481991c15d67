import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import { plantEtag } from '../../../src/resources/plants.js'
import { ServiceError, type ErrorCode } from '../../../src/lib/errors.js'
import type { Plant } from '../../../src/resources/plants.js'
import type { WebhookEventType } from '../../../src/webhooks/events.js'
import { RESOURCE_EVENT_TYPES } from '../../helpers/resources.js'
import { IDEMPOTENCY_TTL_MS } from '../../../src/store/rules.js'
import { MAX_ASSIGNED_ID, type Store } from '../../../src/store/contract.js'
import type { IdempotencyKey } from '../../../src/resources/idempotency.js'

/** The conformance suite's fresh, empty database for one test. Everything is cleaned up by `t.after`. */
export interface ConformanceDatabase {
  /** Opens a store on it; several stores on one database stand for several instances. */
  open: () => Promise<Store>
  /** Makes every stored idempotency key older by `ms`, as if that much time had passed. */
  ageIdempotencyKeys: (ms: number) => Promise<void>
  /** Sets the last id the server assigned itself, as if it had assigned every id up to `last`. */
  setIdSequence: (last: bigint) => Promise<void>
}

export type OpenConformanceDatabase = (t: TestContext) => Promise<ConformanceDatabase>

const MAX = 9223372036854775807n
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
const KEY: IdempotencyKey = { scope: 'client-a', key: 'key-1', fingerprint: 'body-1' }

/** Asserts that the store refused with exactly this code (a ServiceError: the store knows no HTTP). */
const rejectsWith = async (promise: Promise<unknown>, code: ErrorCode): Promise<ServiceError> => {
  const outcome = await settled(promise)
  assert.equal(outcome, code)
  return await promise.then(() => assert.fail('resolved'), (err: ServiceError) => err)
}

/** 'ok' when the promise resolves, else the code of the ServiceError it rejected with. */
export const settled = async (promise: Promise<unknown>): Promise<'ok' | ErrorCode> => {
  try {
    await promise
    return 'ok'
  } catch (err) {
    assert.ok(err instanceof ServiceError, `expected a ServiceError, got ${String(err)}`)
    return err.code
  }
}

/**
 * The Store contract, run against every implementation: both must behave identically,
 * down to the ids they hand out.
 */
export function storeConformance (name: string, openDatabase: OpenConformanceDatabase): void {
  describe(`${name} store conformance`, () => {
    const fresh = async (t: TestContext): Promise<Store> => await (await openDatabase(t)).open()

    test('ping resolves on a working database', async (t) => {
      const store = await fresh(t)
      await store.ping()
    })

    test('generated ids start at 1 and ascend; get returns exactly what create returned', async (t) => {
      const store = await fresh(t)
      const { item: first, replayed } = await store.plants.create({ name: 'Monstera', tag: 'tropical' })
      const { item: second } = await store.plants.create({ name: 'Fern' })
      assert.equal(replayed, false)
      assert.equal(first.id, 1n)
      assert.equal(second.id, 2n)
      assert.equal(first.name, 'Monstera')
      assert.equal(first.tag, 'tropical')
      assert.equal('tag' in second, false, 'no tag means no tag property')
      assert.match(first.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.equal(first.updatedAt, first.createdAt)
      assert.deepEqual(await store.plants.get(1n), first)
      assert.deepEqual(await store.plants.get(2n), second)
      assert.equal(await store.plants.get(3n), undefined)
    })

    test('chosen ids are kept exactly, beyond 2^53 and at both int64 extremes', async (t) => {
      const store = await fresh(t)
      for (const id of [MAX, 9007199254740993n, 9007199254740992n, -9223372036854775808n, 0n]) {
        const { item: plant } = await store.plants.create({ id, name: `plant ${id}` })
        assert.equal(plant.id, id)
        assert.deepEqual(await store.plants.get(id), plant)
      }
      const { items: plants } = await store.plants.list({ limit: 10 })
      assert.deepEqual(plants.map((plant) => plant.id), [9007199254740992n, 9007199254740993n, MAX])
    })

    test('a taken id is a conflict and changes nothing', async (t) => {
      const store = await fresh(t)
      const { item: plant } = await store.plants.create({ id: 7n, name: 'first' })
      const err = await rejectsWith(store.plants.create({ id: 7n, name: 'second' }), 'conflict')
      assert.equal(err.message, 'Plant 7 already exists')
      assert.deepEqual(await store.plants.get(7n), plant)
    })

    test('generated ids skip chosen ones without being pushed up by them, and never repeat an id that ' +
      'existed', async (t) => {
      const store = await fresh(t)
      const generated = async (): Promise<bigint> => (await store.plants.create({ name: 'generated' })).item.id
      await store.plants.create({ id: 2n, name: 'chosen' })
      assert.equal(await generated(), 1n)
      assert.equal(await generated(), 3n, 'skips the chosen 2')
      await store.plants.create({ id: 5n, name: 'chosen, then deleted' })
      await store.plants.create({ id: 6n, name: 'chosen' })
      await store.plants.create({ id: 100n, name: 'chosen far ahead' })
      assert.equal((await store.plants.delete(5n)).id, 5n)
      assert.equal((await store.plants.delete(3n)).id, 3n)
      assert.equal(await generated(), 4n)
      assert.equal(await generated(), 7n, 'skips 5 (deleted, but it existed) and 6')
      assert.equal(await generated(), 8n, 'not pushed up to 100')
      await rejectsWith(store.plants.create({ id: 4n, name: 'taken' }), 'conflict')
      // A chosen id may be one that was deleted (the client asks for it explicitly).
      assert.equal((await store.plants.create({ id: 3n, name: 'back' })).item.id, 3n)
      assert.equal((await store.plants.create({ id: 5n, name: 'back' })).item.id, 5n)
      for (let i = 9n; i < 100n; i++) assert.equal(await generated(), i)
      assert.equal(await generated(), 101n)
    })

    test('after a client takes 2^53 - 1 (and int64 extremes), generated ids stay within 1..2^53 - 1', async (t) => {
      const store = await fresh(t)
      for (const id of [MAX_ASSIGNED_ID, MAX_ASSIGNED_ID + 1n, MAX, -1n]) {
        await store.plants.create({ id, name: `chosen ${id}` })
      }
      const ids: bigint[] = []
      for (let i = 0; i < 3; i++) ids.push((await store.plants.create({ name: `generated ${i}` })).item.id)
      assert.deepEqual(ids, [1n, 2n, 3n])
      await store.plants.delete(MAX_ASSIGNED_ID)
      assert.equal((await store.plants.create({ name: 'after the delete' })).item.id, 4n)
    })

    test('once every id up to 2^53 - 1 is used, a create without an id is refused; chosen ids still ' +
      'work', async (t) => {
      const database = await openDatabase(t)
      const store = await database.open()
      await store.plants.create({ id: MAX_ASSIGNED_ID, name: 'the last safe id, chosen' })
      await database.setIdSequence(MAX_ASSIGNED_ID - 3n)
      await store.plants.create({ id: MAX_ASSIGNED_ID - 1n, name: 'chosen, then deleted' })
      await store.plants.delete(MAX_ASSIGNED_ID - 1n)
      assert.equal((await store.plants.create({ name: 'the last one left' })).item.id, MAX_ASSIGNED_ID - 2n)
      const refused = await rejectsWith(store.plants.create({ name: 'one too many' }), 'ids-exhausted')
      assert.equal(refused.message,
        'No id up to 2^53 - 1 is left for the server to assign; create the plant with a chosen id')
      await rejectsWith(store.plants.create({ name: 'with a key' }, KEY), 'ids-exhausted')
      assert.equal((await store.plants.create({ id: 7n, name: 'chosen' })).item.id, 7n)
      await rejectsWith(store.plants.create({ name: 'still none' }), 'ids-exhausted')
      const { items: plants } = await store.plants.list({ limit: 10 })
      assert.deepEqual(plants.map((plant) => plant.id), [7n, MAX_ASSIGNED_ID - 2n, MAX_ASSIGNED_ID])
      // The refused idempotent create left its key unused.
      assert.equal((await store.plants.create({ id: 8n, name: 'with a key' }, KEY)).replayed, false)
    })

    test('every valid string is stored and read back exactly', async (t) => {
      const store = await fresh(t)
      const texts = [
        'Monstera',
        '🌵🪴 astral',
        '🌿'.repeat(100),
        'x'.repeat(100),
        'e\u0301 combining, precomposed \u00e9',
        '👩‍👩‍👧 ZWJ, 🇳🇴 flag',
        'עברית RTL \u202e override',
        '\u0001\u001f\u007f\u0085 controls, tab\tnew\nline',
        '\ufeff BOM \ufffd replacement \uffff noncharacter \u{10ffff}',
        '  spaced  ',
        '"quotes" \\ backslash </script>'
      ]
      for (const text of texts) {
        // The first 50 characters (code points: a surrogate pair is never split).
        const tag = [...text].slice(0, 50).join('')
        const { item: plant } = await store.plants.create({ name: text, tag })
        const read = await store.plants.get(plant.id)
        assert.equal(read?.name, text)
        assert.equal(read?.tag, tag)
        const { items: plants } = await store.plants.list({ limit: 1, after: plant.id - 1n, tag })
        assert.deepEqual(plants, [plant], JSON.stringify(text))
        const updated = await store.plants.update(plant.id, { name: `${text}!`, tag: text })
        assert.deepEqual(await store.plants.get(plant.id), updated)
        assert.equal(updated.name, `${text}!`)
        assert.equal(updated.tag, text)
      }
    })

    test('list: ordered by id, keyset cursor, limit and hasMore, tag filter', async (t) => {
      const store = await fresh(t)
      for (let i = 1; i <= 5; i++) await store.plants.create({ name: `p${i}`, ...(i % 2 === 1 ? { tag: 'odd' } : {}) })
      await store.plants.create({ id: MAX, name: 'last', tag: 'odd' })

      const ids = (page: { items: Array<{ id: bigint }> }): bigint[] => page.items.map((plant) => plant.id)
      const first = await store.plants.list({ limit: 2 })
      assert.deepEqual(ids(first), [1n, 2n])
      assert.equal(first.hasMore, true)
      const second = await store.plants.list({ limit: 2, after: 2n })
      assert.deepEqual(ids(second), [3n, 4n])
      assert.equal(second.hasMore, true)
      const last = await store.plants.list({ limit: 2, after: 4n })
      assert.deepEqual(ids(last), [5n, MAX])
      assert.equal(last.hasMore, false, 'an exactly full last page has no more')
      assert.deepEqual(await store.plants.list({ limit: 2, after: MAX }), { items: [], hasMore: false })

      const odd = await store.plants.list({ limit: 3, tag: 'odd' })
      assert.deepEqual(ids(odd), [1n, 3n, 5n])
      assert.equal(odd.hasMore, true)
      assert.deepEqual(ids(await store.plants.list({ limit: 3, tag: 'odd', after: 5n })), [MAX])
      assert.deepEqual(await store.plants.list({ limit: 3, tag: 'none' }), { items: [], hasMore: false })
      assert.deepEqual((await store.plants.list({ limit: 1 })).items[0], await store.plants.get(1n))
    })

    test('replace sets name and tag (a missing tag clears it); createdAt stays, updatedAt moves on', async (t) => {
      const store = await fresh(t)
      const { item: plant } = await store.plants.create({ name: 'old', tag: 'x' })
      const replaced = await store.plants.replace(plant.id, { name: 'new' })
      assert.equal(replaced.name, 'new')
      assert.equal('tag' in replaced, false)
      assert.equal(replaced.createdAt, plant.createdAt)
      assert.ok(replaced.updatedAt > plant.updatedAt)
      assert.deepEqual(await store.plants.get(plant.id), replaced)
      assert.equal((await rejectsWith(store.plants.replace(404n, { name: 'x' }), 'not-found')).message,
        'Plant 404 not found')
    })

    test('update changes only what it is given; tag null clears the tag', async (t) => {
      const store = await fresh(t)
      const { item: plant } = await store.plants.create({ name: 'name', tag: 'tag' })
      const renamed = await store.plants.update(plant.id, { name: 'renamed' })
      assert.equal(renamed.name, 'renamed')
      assert.equal(renamed.tag, 'tag')
      const retagged = await store.plants.update(plant.id, { tag: 'other' })
      assert.deepEqual([retagged.name, retagged.tag], ['renamed', 'other'])
      const cleared = await store.plants.update(plant.id, { tag: null })
      assert.equal('tag' in cleared, false)
      assert.equal(cleared.name, 'renamed')
      const untouched = await store.plants.update(plant.id, {})
      assert.equal(untouched.name, 'renamed')
      await rejectsWith(store.plants.update(404n, { name: 'x' }), 'not-found')
    })

    test('updatedAt strictly increases with every write, even within one millisecond', async (t) => {
      const store = await fresh(t)
      const { item: plant } = await store.plants.create({ name: 'busy' })
      let previous = plant
      for (let i = 0; i < 20; i++) {
        const updated = await store.plants.update(plant.id, { name: `busy ${i}` })
        assert.ok(updated.updatedAt > previous.updatedAt, `${updated.updatedAt} > ${previous.updatedAt}`)
        assert.notEqual(plantEtag(updated), plantEtag(previous))
        previous = updated
      }
    })

    test('ifMatch: a write goes ahead only when the current ETag is listed', async (t) => {
      const store = await fresh(t)
      const { item: plant } = await store.plants.create({ name: 'guarded' })
      const etag = plantEtag(plant)
      const refused = await rejectsWith(store.plants.update(plant.id, { name: 'x' }, ['"stale"']),
        'precondition-failed')
      assert.equal(refused.message,
        `Plant ${plant.id} does not match If-Match: it has changed or is gone; GET it again`)
      await rejectsWith(store.plants.replace(plant.id, { name: 'x' }, []), 'precondition-failed')
      await rejectsWith(store.plants.delete(plant.id, ['"stale"']), 'precondition-failed')
      assert.deepEqual(await store.plants.get(plant.id), plant, 'refused writes change nothing')

      const updated = await store.plants.update(plant.id, { name: 'y' }, ['"stale"', etag])
      await rejectsWith(store.plants.replace(plant.id, { name: 'z' }, [etag]), 'precondition-failed')
      const replaced = await store.plants.replace(plant.id, { name: 'z' }, [plantEtag(updated)])
      await rejectsWith(store.plants.delete(plant.id, [plantEtag(updated)]), 'precondition-failed')
      assert.deepEqual(await store.plants.delete(plant.id, [plantEtag(replaced)]), replaced,
        'a delete answers the plant as it was')
      // A condition cannot hold on a plant that is gone (RFC 9110 §13.1.1): not-found only without one.
      await rejectsWith(store.plants.update(plant.id, { name: 'gone' }, [etag]), 'precondition-failed')
      await rejectsWith(store.plants.delete(plant.id, [etag]), 'precondition-failed')
      await rejectsWith(store.plants.delete(plant.id, '*'), 'precondition-failed')
      await rejectsWith(store.plants.delete(plant.id), 'not-found')
    })

    test('ifMatch *: any current plant', async (t) => {
      const store = await fresh(t)
      const { item: plant } = await store.plants.create({ name: 'any' })
      const updated = await store.plants.update(plant.id, { name: 'any at all' }, '*')
      assert.equal(updated.name, 'any at all')
      assert.equal((await store.plants.replace(plant.id, { name: 'again' }, '*')).name, 'again')
      assert.equal((await store.plants.delete(plant.id, '*')).name, 'again')
      await rejectsWith(store.plants.replace(plant.id, { name: 'gone' }, '*'), 'precondition-failed')
    })

    test('delete answers the plant as it was once, then not-found', async (t) => {
      const store = await fresh(t)
      const { item: plant } = await store.plants.create({ name: 'short-lived', tag: 'brief' })
      assert.deepEqual(await store.plants.delete(plant.id), plant)
      assert.equal(await store.plants.get(plant.id), undefined)
      await rejectsWith(store.plants.delete(plant.id), 'not-found')
      assert.deepEqual(await store.plants.list({ limit: 10 }), { items: [], hasMore: false })
    })

    test('idempotency key: a retry gets the first plant back and creates nothing', async (t) => {
      const store = await fresh(t)
      const first = await store.plants.create({ name: 'once' }, KEY)
      assert.equal(first.replayed, false)
      const retry = await store.plants.create({ name: 'once' }, KEY)
      assert.deepEqual(retry, { item: first.item, replayed: true })
      assert.equal((await store.plants.list({ limit: 10 })).items.length, 1)
      // The answer is the plant as first created, even after it changed or went away.
      await store.plants.update(first.item.id, { name: 'changed' })
      assert.deepEqual(await store.plants.create({ name: 'once' }, KEY), { item: first.item, replayed: true })
      await store.plants.delete(first.item.id)
      assert.deepEqual(await store.plants.create({ name: 'once' }, KEY), { item: first.item, replayed: true })
    })

    test('admit: asked only of a new create, before it writes; a refusal leaves no plant and no key, a ' +
      'replay passes', async (t) => {
      const store = await fresh(t)
      const refuse = (): void => { throw new ServiceError('collection-limit', 'full') }
      const first = await store.plants.create({ name: 'once' }, KEY)
      assert.deepEqual(await store.plants.create({ name: 'once' }, KEY, undefined, refuse),
        { item: first.item, replayed: true })
      // Each way a create can run on each store: keyed, with a chosen id, and the plain one.
      await rejectsWith(store.plants.create({ name: 'new' }, { ...KEY, key: 'key-2' }, undefined, refuse),
        'collection-limit')
      await rejectsWith(store.plants.create({ id: 50n, name: 'chosen' }, undefined, undefined, refuse),
        'collection-limit')
      await rejectsWith(store.plants.create({ name: 'plain' }, undefined, undefined, refuse), 'collection-limit')
      assert.deepEqual((await store.plants.list({ limit: 10 })).items, [first.item])
      // The refused key was not saved: with room, it creates.
      const later = await store.plants.create({ name: 'new' }, { ...KEY, key: 'key-2' }, undefined, () => {})
      assert.equal(later.replayed, false)
      assert.equal(later.item.id, 2n)
    })

    test('idempotency key: another body is refused; keys are per scope', async (t) => {
      const store = await fresh(t)
      await store.plants.create({ name: 'once' }, KEY)
      await rejectsWith(store.plants.create({ name: 'other' }, { ...KEY, fingerprint: 'body-2' }),
        'idempotency-key-reused')
      const other = await store.plants.create({ name: 'once' }, { ...KEY, scope: 'client-b' })
      assert.equal(other.replayed, false)
      assert.equal(other.item.id, 2n)
      assert.equal((await store.plants.list({ limit: 10 })).items.length, 2)
    })

    test('idempotency key: a create that failed on a taken id leaves the key unused', async (t) => {
      const store = await fresh(t)
      await store.plants.create({ id: 9n, name: 'taken' })
      await rejectsWith(store.plants.create({ id: 9n, name: 'mine' }, KEY), 'conflict')
      assert.equal((await store.plants.delete(9n)).id, 9n)
      const created = await store.plants.create({ id: 9n, name: 'mine' }, KEY)
      assert.equal(created.replayed, false)
      assert.equal(created.item.name, 'mine')
    })

    test('idempotency key: forgotten after 24 hours, then usable for another body', async (t) => {
      const database = await openDatabase(t)
      const store = await database.open()
      const first = await store.plants.create({ name: 'once' }, KEY)
      await database.ageIdempotencyKeys(IDEMPOTENCY_TTL_MS - 60_000)
      const before = await store.plants.create({ name: 'once' }, KEY)
      assert.deepEqual([before.replayed, before.item.id], [true, first.item.id], 'still remembered just before')
      await database.ageIdempotencyKeys(60_000)
      const second = await store.plants.create({ name: 'other' }, { ...KEY, fingerprint: 'body-2' })
      assert.equal(second.replayed, false)
      assert.equal(second.item.id, 2n)
      assert.deepEqual(await store.plants.create({ name: 'other' }, { ...KEY, fingerprint: 'body-2' }),
        { item: second.item, replayed: true })
    })

    test('concurrent deletes of one id from two instances: exactly one deleted', async (t) => {
      const { open } = await openDatabase(t)
      const stores = [await open(), await open()]
      const ids = [(await stores[0]!.plants.create({ name: 'a' })).item.id,
        (await stores[1]!.plants.create({ name: 'b' })).item.id]
      const results = await Promise.all(ids.flatMap((id) =>
        Array.from({ length: 10 }, async (_, i) => ({ id, result: await settled(stores[i % 2]!.plants.delete(id)) }))))
      for (const id of ids) {
        const mine = results.filter((r) => r.id === id).map((r) => r.result)
        assert.equal(mine.filter((r) => r === 'ok').length, 1, `id ${id}`)
        assert.equal(mine.filter((r) => r === 'not-found').length, 9, `id ${id}`)
      }
    })

    test('concurrent creates of one chosen id from two instances: exactly one wins', async (t) => {
      const { open } = await openDatabase(t)
      const stores = [await open(), await open()]
      const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) =>
        stores[i % 2]!.plants.create({ id: 42n, name: `racer ${i}` })))
      assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1)
      const losers = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected')
      assert.equal(losers.length, 9)
      for (const loser of losers) assert.ok(loser.reason instanceof ServiceError && loser.reason.code === 'conflict')
    })

    test('concurrent generated creates from two instances skip the same chosen ids, and get distinct ' +
      'ids', async (t) => {
      const { open } = await openDatabase(t)
      const stores = [await open(), await open()]
      for (const id of [1n, 2n, 3n, 5n, 8n, 9n, 10n]) await stores[0]!.plants.create({ id, name: `chosen ${id}` })
      await stores[1]!.plants.delete(9n)
      const created = await Promise.all(
        Array.from({ length: 10 },
          async (_, i) => (await stores[i % 2]!.plants.create({ name: `generated ${i}` })).item.id))
      // Which free ids exactly may depend on the interleaving (a PostgreSQL sequence may leave gaps).
      assert.equal(new Set(created).size, 10)
      for (const id of created) assert.ok(id >= 4n && id <= 40n && ![5n, 8n, 9n, 10n].includes(id), `id ${id}`)
    })

    test('concurrent generated creates from two instances get distinct ids, and no chosen id is hit', async (t) => {
      const { open } = await openDatabase(t)
      const stores = [await open(), await open()]
      // Chosen ids far above the generated ones and descending, so no generated id can take one first.
      const created = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        i % 5 === 0
          ? stores[i % 2]!.plants.create({ id: 10000n - BigInt(i) * 100n, name: `chosen ${i}` })
          : stores[i % 2]!.plants.create({ name: `generated ${i}` })))
      const ids = new Set(created.map((c) => c.item.id))
      assert.equal(ids.size, 20)
      assert.equal((await stores[0]!.plants.list({ limit: 100 })).items.length, 20)
    })

    test('concurrent creates with one idempotency key: one plant, every answer the same', async (t) => {
      const { open } = await openDatabase(t)
      const stores = [await open(), await open()]
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => stores[i % 2]!.plants.create({ name: 'once' }, KEY)))
      assert.equal(results.filter((r) => !r.replayed).length, 1)
      for (const result of results) assert.deepEqual(result.item, results[0]!.item)
      assert.equal((await stores[1]!.plants.list({ limit: 10 })).items.length, 1)
    })

    test('concurrent conditional writes with one ETag: exactly one goes ahead', async (t) => {
      const { open } = await openDatabase(t)
      const stores = [await open(), await open()]
      const { item: plant } = await stores[0]!.plants.create({ name: 'contested' })
      const etag = plantEtag(plant)
      const results = await Promise.all(Array.from({ length: 10 }, async (_, i) =>
        await settled(stores[i % 2]!.plants.update(plant.id, { name: `writer ${i}` }, [etag]))))
      assert.equal(results.filter((r) => r === 'ok').length, 1)
      assert.equal(results.filter((r) => r === 'precondition-failed').length, 9)
    })

    test('a write through one instance is visible through another at once', async (t) => {
      const { open } = await openDatabase(t)
      const [a, b] = [await open(), await open()]
      const { item: plant } = await a.plants.create({ name: 'shared' })
      assert.deepEqual(await b.plants.get(plant.id), plant)
      const updated = await b.plants.update(plant.id, { tag: 'seen' })
      assert.deepEqual(await a.plants.get(plant.id), updated)
      assert.deepEqual(await a.plants.delete(plant.id), updated)
      assert.equal(await b.plants.get(plant.id), undefined)
    })

    test('reopening keeps every plant and the id sequence', async (t) => {
      const { open } = await openDatabase(t)
      const first = await open()
      const { item: plant } = await first.plants.create({ id: MAX - 1n, name: 'near max', tag: 'big' })
      await first.plants.delete(plant.id)
      await first.plants.create({ name: 'one' })
      await first.plants.create({ id: 3n, name: 'chosen ahead' })
      await first.plants.delete(3n)
      await first.plants.delete((await first.plants.create({ name: 'two' })).item.id)
      await first.close()
      const second = await open()
      assert.equal(await second.plants.get(plant.id), undefined)
      await rejectsWith(second.plants.create({ id: 1n, name: 'a' }), 'conflict')
      assert.equal((await second.plants.create({ name: 'after' })).item.id, 4n,
        'neither the deleted 2 nor the deleted chosen 3')
    })

    describe('events: every change writes its deliveries in its own transaction', () => {
      const subscribe = async (
        store: Store, events: WebhookEventType[] = [...RESOURCE_EVENT_TYPES], disabled = false
      ): Promise<bigint> =>
        (await store.webhooks.createSubscription(
          { owner: 'owner-a', url: 'https://receiver.example/hook', events, disabled, secret: SECRET }, Date.now())).id
      /** Every delivery of the subscription, oldest first, with its event as the receiver gets it. */
      const outbox = async (store: Store,
        id: bigint): Promise<Array<{ type: string, data: Record<string, unknown> }>> => {
        const claimed = await store.webhooks.claimDue({
          lease: `check-${id}`,
          now: Date.now() + 1000,
          leaseMs: 60_000,
          limit: 100,
          perSubscription: 100,
          skipSubscriptions: []
        })
        return claimed.filter((delivery) => delivery.subscriptionId === id).map((delivery) => {
          const body = JSON.parse(delivery.payload) as {
            type: string,
            timestamp: string,
            data: Record<string, unknown>
          }
          assert.equal(delivery.eventType, body.type)
          assert.match(body.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
          return { type: body.type, data: body.data }
        })
      }
      const asJson = (plant: Plant): Record<string, unknown> => ({ ...plant, id: Number(plant.id) })

      test('created, updated (replace and update) and deleted, each with the plant as written; refusals ' +
        'and replays write none', async (t) => {
        const store = await fresh(t)
        const id = await subscribe(store)
        const { item: created } = await store.plants.create({ name: 'Monstera', tag: 'tropical' }, KEY)
        await store.plants.create({ name: 'Monstera', tag: 'tropical' }, KEY)
        await rejectsWith(store.plants.create({ name: 'other body' }, { ...KEY, fingerprint: 'body-2' }),
          'idempotency-key-reused')
        await rejectsWith(store.plants.create({ id: created.id, name: 'taken' }), 'conflict')
        const replaced = await store.plants.replace(created.id, { name: 'Fern' })
        await rejectsWith(store.plants.update(created.id, { tag: 'x' }, ['"stale"']), 'precondition-failed')
        await rejectsWith(store.plants.update(404n, { tag: 'x' }), 'not-found')
        const updated = await store.plants.update(created.id, { tag: 'green' }, [plantEtag(replaced)])
        const deleted = await store.plants.delete(created.id)
        await rejectsWith(store.plants.delete(created.id), 'not-found')
        assert.deepEqual(await outbox(store, id), [
          { type: 'plant.created', data: asJson(created) },
          { type: 'plant.updated', data: asJson(replaced) },
          { type: 'plant.updated', data: asJson(updated) },
          { type: 'plant.deleted', data: asJson(deleted) }
        ])
        assert.deepEqual(deleted, updated, 'a deleted plant is sent as it was')
      })

      test('a write that changes nothing keeps updatedAt (so the ETag) and writes no event', async (t) => {
        const store = await fresh(t)
        const id = await subscribe(store)
        const { item: plant } = await store.plants.create({ name: 'Monstera', tag: 'tropical' })
        const untagged = (await store.plants.create({ name: 'Fern' })).item
        assert.deepEqual(await store.plants.update(plant.id, {}), plant)
        assert.deepEqual(await store.plants.update(plant.id, { name: 'Monstera', tag: 'tropical' }), plant)
        assert.deepEqual(await store.plants.update(plant.id, { name: 'Monstera' }, [plantEtag(plant)]), plant)
        assert.deepEqual(await store.plants.replace(plant.id, { name: 'Monstera', tag: 'tropical' }, '*'), plant)
        assert.deepEqual(await store.plants.replace(untagged.id, { name: 'Fern' }), untagged)
        assert.deepEqual(await store.plants.update(untagged.id, { tag: null }), untagged)
        assert.deepEqual(await store.plants.get(plant.id), plant)
        await rejectsWith(store.plants.update(plant.id, {}, ['"stale"']), 'precondition-failed')
        await rejectsWith(store.plants.update(404n, {}), 'not-found')
        // A change of case, or a tag cleared, is a change.
        const renamed = await store.plants.update(plant.id, { name: 'monstera' })
        assert.ok(renamed.updatedAt > plant.updatedAt)
        const cleared = await store.plants.replace(plant.id, { name: 'monstera' })
        assert.equal('tag' in cleared, false)
        assert.deepEqual(await outbox(store, id), [
          { type: 'plant.created', data: asJson(plant) },
          { type: 'plant.created', data: asJson(untagged) },
          { type: 'plant.updated', data: asJson(renamed) },
          { type: 'plant.updated', data: asJson(cleared) }
        ])
      })

      test('a create with a server-assigned id and no key writes its event with the id it was given, also ' +
        'past a chosen id it had to skip', async (t) => {
        const store = await fresh(t)
        const id = await subscribe(store)
        const { item: first } = await store.plants.create({ name: 'Monstera', tag: 'tropical' })
        const { item: chosen } = await store.plants.create({ id: first.id + 1n, name: 'chosen' })
        const { item: skipped } = await store.plants.create({ name: 'Fern' })
        assert.equal(skipped.id, first.id + 2n, 'the id after the chosen one')
        assert.deepEqual(await outbox(store, id), [
          { type: 'plant.created', data: asJson(first) },
          { type: 'plant.created', data: asJson(chosen) },
          { type: 'plant.created', data: asJson(skipped) }
        ])
      })

      test('a subscription gets only the types it asked for; a disabled one gets none; each event is one ' +
        'message for all', async (t) => {
        const store = await fresh(t)
        const all = await subscribe(store)
        const deletions = await subscribe(store, ['plant.deleted'])
        const disabled = await subscribe(store, [...RESOURCE_EVENT_TYPES], true)
        const { item: plant } = await store.plants.create({ name: 'a' })
        await store.plants.delete(plant.id)
        const page = await store.webhooks.listDeliveries('owner-a', all, { limit: 10 })
        assert.deepEqual(page?.deliveries.map((delivery) => delivery.eventType), ['plant.deleted', 'plant.created'])
        assert.deepEqual(
          (await store.webhooks.listDeliveries('owner-a', deletions, { limit: 10 }))?.deliveries.map(
            (delivery) => delivery.eventType), ['plant.deleted'])
        assert.deepEqual((await store.webhooks.listDeliveries('owner-a', disabled, { limit: 10 }))?.deliveries, [])
        const claimed = await store.webhooks.claimDue({
          lease: 'l',
          now: Date.now() + 1000,
          leaseMs: 60_000,
          limit: 10,
          perSubscription: 10,
          skipSubscriptions: []
        })
        const deletedIds = claimed.filter((delivery) => delivery.eventType === 'plant.deleted').map(
          (delivery) => delivery.messageId)
        assert.equal(deletedIds.length, 2)
        assert.equal(deletedIds[0], deletedIds[1], 'one webhook-id per event, whichever subscription receives it')
      })

      test('writes before any subscription emit nothing; once one is enabled (created, or enabled again) ' +
        'the next write emits', async (t) => {
        const store = await fresh(t)
        await store.plants.create({ name: 'before any subscription' })
        const id = await subscribe(store)
        await store.plants.create({ name: 'after' })
        await store.webhooks.updateSubscription('owner-a', id, { disabled: true }, Date.now())
        await store.plants.create({ name: 'while disabled' })
        await store.webhooks.updateSubscription('owner-a', id, { disabled: false }, Date.now())
        await store.plants.create({ name: 'enabled again' })
        const names = (await outbox(store, id)).map((event) => event.data.name)
        assert.deepEqual(names, ['after', 'enabled again'])
      })

      test('a dispatcher listening is woken after a write that wrote deliveries', async (t) => {
        const store = await fresh(t)
        await subscribe(store)
        let woken = 0
        const listen = store.webhooks.listen
        assert.ok(listen !== undefined, 'both stores tell their dispatchers of new deliveries')
        const unlisten = await listen(() => { woken++ })
        t.after(unlisten)
        const before = woken
        await store.plants.create({ name: 'a' })
        for (let turn = 0; turn < 200; turn++) {
          if (woken > before) break
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
        assert.ok(woken > before)
      })
    })

    test('close can be called twice', async (t) => {
      const store = await fresh(t)
      await store.close()
      await store.close()
    })
  })
}
