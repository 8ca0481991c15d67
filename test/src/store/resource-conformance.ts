import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import type {
  Repository, ResourceDefinition, ResourceSchemas,
  ResourceTypes
} from '../../../src/resources/definition.js'
import { PLANTS, type PlantTypes } from '../../../src/resources/plants.js'
import type { WebhookStore } from '../../../src/webhooks/store-contract.js'
import { eventType, RESOURCE_CHANGES, type WebhookEventType } from '../../../src/webhooks/events.js'
import { settled } from './conformance.js'
import type { IdempotencyKey } from '../../../src/resources/idempotency.js'

/** One store serving the resource under test, as its suite sees it. */
export interface ResourceStore<R extends ResourceTypes> {
  repository: Repository<R>
  webhooks: WebhookStore
  close: () => Promise<void>
}

/** A fresh, empty database for one test: each `open` is another store (instance) on it. */
export type OpenResourceDatabase<R extends ResourceTypes> =
  (t: TestContext) => Promise<{ open: () => Promise<ResourceStore<R>> }>

/** A resource declaration, and sample data its schemas accept: what the generic suite needs of it. */
export interface ResourceUnderTest<R extends ResourceTypes> {
  definition: ResourceDefinition<string, string, R, ResourceSchemas>
  /** The n-th sample create, its values distinct for distinct n; `filtered`: one `filter` keeps. */
  sample: (n: number, filtered?: boolean) => R['create']
  /** With a chosen id. */
  withId: (item: R['create'], id: bigint) => R['create']
  /** A replace whose values differ from every sample's. */
  replacement: (n: number) => R['replace']
  /** A merge patch that changes a sample, and one that changes nothing. */
  change: (n: number) => R['changes']
  noChange: R['changes']
  /** A list query's filters that keep exactly the filtered samples. */
  filter: (query: { limit: number, after?: bigint }) => R['query']
}

/** The plants' samples: the generic suite runs for them too, beside the plants' own (conformance.ts). */
export const PLANTS_UNDER_TEST: ResourceUnderTest<PlantTypes> = {
  definition: PLANTS,
  sample: (n, filtered = false) =>
    ({ name: `plant ${n}`, ...(filtered ? { tag: 'odd' } : n % 3 === 0 ? {} : { tag: `t${n}` }) }),
  withId: (plant, id) => ({ ...plant, id }),
  replacement: (n) => ({ name: `replaced ${n}` }),
  change: (n) => ({ name: `changed ${n}`, tag: null }),
  noChange: {},
  filter: (query) => ({ ...query, tag: 'odd' })
}

const KEY: IdempotencyKey = { scope: 'client-a', key: 'key-1', fingerprint: 'body-1' }
const MAX = 9223372036854775807n
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

const codeOf = async (promise: Promise<unknown>): Promise<string> => await settled(promise)

/**
 * The repository contract for any declared resource, on any store: what storeConformance checks of
 * plants, with the resource's own declaration and samples.
 */
export function resourceConformance<R extends ResourceTypes> (
  name: string, subject: ResourceUnderTest<R>, openDatabase: OpenResourceDatabase<R>
): void {
  const { definition, sample, withId } = subject
  const json = (item: R['item']): unknown => JSON.parse(definition.json(item))
  describe(`${name} store conformance of ${definition.collection}`, () => {
    const fresh = async (t: TestContext): Promise<ResourceStore<R>> => await (await openDatabase(t)).open()

    test('generated ids ascend from 1; get returns what create returned; chosen ids are kept exactly', async (t) => {
      const { repository } = await fresh(t)
      const first = await repository.create(sample(1))
      assert.equal(first.replayed, false)
      assert.equal(first.item.id, 1n)
      assert.deepEqual(await repository.get(1n), first.item)
      assert.equal((await repository.create(sample(2))).item.id, 2n)
      for (const id of [MAX, -MAX - 1n, 0n]) assert.deepEqual(await repository.get(id), undefined)
      for (const id of [MAX, -MAX - 1n, 0n]) assert.equal((await repository.create(withId(sample(3), id))).item.id, id)
      assert.equal(await codeOf(repository.create(withId(sample(4), 2n))), 'conflict')
      assert.equal(await repository.get(3n), undefined)
    })

    test('generated ids skip chosen ones, also once deleted, and are not pushed up by them', async (t) => {
      const { repository } = await fresh(t)
      const generated = async (): Promise<bigint> => (await repository.create(sample(0))).item.id
      await repository.create(withId(sample(1), 2n))
      await repository.create(withId(sample(2), 4n))
      await repository.create(withId(sample(3), 100n))
      await repository.delete(4n)
      assert.deepEqual([await generated(), await generated(), await generated(), await generated()], [1n, 3n, 5n, 6n])
    })

    test('list: ordered by id, keyset pages, hasMore, the declared filter', async (t) => {
      const { repository } = await fresh(t)
      for (let i = 1; i <= 5; i++) await repository.create(sample(i, i % 2 === 1))
      const ids = (page: { items: Array<{ id: bigint }> }): bigint[] => page.items.map((item) => item.id)
      const first = await repository.list({ limit: 2 })
      assert.deepEqual([ids(first), first.hasMore], [[1n, 2n], true])
      const last = await repository.list({ limit: 3, after: 2n })
      assert.deepEqual([ids(last), last.hasMore], [[3n, 4n, 5n], false])
      const filtered = await repository.list(subject.filter({ limit: 2 }))
      assert.deepEqual([ids(filtered), filtered.hasMore], [[1n, 3n], true])
      assert.deepEqual(ids(await repository.list(subject.filter({ limit: 2, after: 3n }))), [5n])
      assert.deepEqual(first.items[0], await repository.get(1n))
    })

    test('replace and update write what they are given; a write that changes nothing keeps the ETag', async (t) => {
      const { repository } = await fresh(t)
      const { item } = await repository.create(sample(1))
      const replaced = await repository.replace(item.id, subject.replacement(1))
      assert.notEqual(definition.etag(replaced), definition.etag(item))
      assert.deepEqual(await repository.get(item.id), replaced)
      const updated = await repository.update(item.id, subject.change(1))
      assert.notEqual(definition.etag(updated), definition.etag(replaced))
      assert.deepEqual(await repository.get(item.id), updated)
      assert.deepEqual(await repository.update(item.id, subject.noChange), updated)
      assert.deepEqual(await repository.update(item.id, subject.change(1)), updated)
      const missing = await repository.replace(404n, subject.replacement(2)).catch((err: Error) => err.message)
      assert.equal(missing, `${definition.title} 404 not found`)
    })

    test('If-Match: a write goes ahead only on the current ETag; a gone row fails it', async (t) => {
      const { repository } = await fresh(t)
      const { item } = await repository.create(sample(1))
      assert.equal(await codeOf(repository.update(item.id, subject.change(1), ['"stale"'])), 'precondition-failed')
      assert.equal(await codeOf(repository.delete(item.id, ['"stale"'])), 'precondition-failed')
      const updated = await repository.update(item.id, subject.change(1), [definition.etag(item)])
      const stale = [definition.etag(item)]
      assert.equal(await codeOf(repository.replace(item.id, subject.replacement(1), stale)), 'precondition-failed')
      assert.deepEqual(await repository.delete(item.id, '*'), updated)
      assert.equal(await codeOf(repository.delete(item.id, '*')), 'precondition-failed')
      assert.equal(await codeOf(repository.delete(item.id)), 'not-found')
    })

    test('idempotency keys: a retry replays the first answer, another body is refused, per scope', async (t) => {
      const { repository } = await fresh(t)
      const first = await repository.create(sample(1), KEY)
      await repository.update(first.item.id, subject.change(1))
      assert.deepEqual(await repository.create(sample(1), KEY), { item: first.item, replayed: true })
      await repository.delete(first.item.id)
      assert.deepEqual(await repository.create(sample(1), KEY), { item: first.item, replayed: true })
      const reused = repository.create(sample(2), { ...KEY, fingerprint: 'body-2' })
      assert.equal(await codeOf(reused), 'idempotency-key-reused')
      const other = await repository.create(sample(1), { ...KEY, scope: 'client-b' })
      assert.deepEqual([other.replayed, other.item.id], [false, 2n])
      const refuse = (): void => { throw new Error('refused') }
      await assert.rejects(repository.create(sample(3), { ...KEY, key: 'key-2' }, undefined, refuse), /refused/)
      assert.equal((await repository.create(sample(3), { ...KEY, key: 'key-2' })).replayed, false)
    })

    test('every change writes its event in its transaction, with the representation as written', async (t) => {
      const { repository, webhooks } = await fresh(t)
      const events = RESOURCE_CHANGES.map((change) => eventType(definition, change))
      // The webhook store keeps whatever types it is given: the routes check them against the served catalogue.
      const record = {
        owner: 'owner-a',
        url: 'https://receiver.example/hook',
        events: events as readonly string[] as WebhookEventType[]
      }
      const subscription = await webhooks.createSubscription({ ...record, disabled: false, secret: SECRET }, Date.now())
      const { item } = await repository.create(sample(1))
      assert.deepEqual(await repository.update(item.id, subject.noChange), item)
      const updated = await repository.update(item.id, subject.change(1))
      const deleted = await repository.delete(item.id)
      const claimed = await webhooks.claimDue({
        lease: 'check', now: Date.now() + 1000, leaseMs: 60_000, limit: 100, perSubscription: 100, skipSubscriptions: []
      })
      const sent = claimed.filter((delivery) => delivery.subscriptionId === subscription.id)
        .map((delivery) => JSON.parse(delivery.payload) as { type: string, data: unknown })
        .map(({ type, data }) => ({ type, data }))
      assert.deepEqual(sent, [
        { type: events[0], data: json(item) },
        { type: events[1], data: json(updated) },
        { type: events[2], data: json(deleted) }
      ])
    })

    test('another instance sees a write at once; reopening keeps the rows and the id sequence', async (t) => {
      const { open } = await openDatabase(t)
      const [a, b] = [await open(), await open()]
      const { item } = await a.repository.create(sample(1))
      assert.deepEqual(await b.repository.get(item.id), item)
      await b.repository.create(withId(sample(2), 2n))
      await b.repository.delete(2n)
      await a.close()
      const c = await open()
      assert.deepEqual(await c.repository.get(item.id), item)
      assert.equal((await c.repository.create(sample(3))).item.id, 3n)
    })
  })
}
