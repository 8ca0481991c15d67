import assert from 'node:assert/strict'
import { ServiceError } from '../../../src/lib/errors.js'
import { describe, test, type TestContext } from 'node:test'
import type { Plant } from '../../../src/resources/plants.js'
import { isoTime } from '../../../src/store/iso-time.js'
import { PLANTS } from '../../../src/resources/plants.js'
import { resourceEvent } from '../../../src/webhooks/events.js'
import type { ResourceEvent } from '../../../src/webhooks/events.js'
import type {
  ClaimedDelivery, ClaimRequest, DeliveryQuery, NewSubscriptionRecord,
  WebhookStore
} from '../../../src/webhooks/store-contract.js'
import { RESOURCE_EVENT_TYPES } from '../../helpers/resources.js'

/** A fresh, migrated database for one test; everything is cleaned up when the test ends. */
export interface WebhookTestDatabase {
  /** Opens a webhook store on it; several stores on one database stand for several instances. */
  open: () => Promise<WebhookStore>
  /**
   * Enqueues through the store's transactional enqueue function inside a transaction of the
   * caller's (as the plant writes will), then commits or rolls back; resolves with its count.
   */
  enqueueInTransaction: (event: ResourceEvent, now: number, commit: boolean) => Promise<number>
}

export type OpenWebhookDatabase = (t: TestContext) => Promise<WebhookTestDatabase>

const T0 = 1_767_225_600_000 // 2026-01-01T00:00:00.000Z
const ALICE = 'a'.repeat(64)
const BOB = 'b'.repeat(64)

export const plant = (id: bigint, name = 'Monstera'): Plant =>
  ({ id, name, tag: 'tropical', createdAt: isoTime(T0), updatedAt: isoTime(T0) })

const created = (id: bigint, occurredAt = T0): ResourceEvent => resourceEvent(PLANTS, 'created', plant(id), occurredAt)

const record = (overrides: Partial<NewSubscriptionRecord> = {}): NewSubscriptionRecord => ({
  owner: ALICE,
  url: 'https://hooks.example.com/plants',
  events: [...RESOURCE_EVENT_TYPES],
  disabled: false,
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  ...overrides
})

const claimRequest = (overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
  lease: 'instance-a:1', now: T0, leaseMs: 60_000, limit: 10, perSubscription: 10, skipSubscriptions: [], ...overrides
})

/**
 * The WebhookStore contract, run against every implementation: both must behave identically,
 * down to the ids they hand out.
 */
export function webhookStoreConformance (name: string, openDatabase: OpenWebhookDatabase): void {
  describe(`${name} webhook store conformance`, () => {
    const fresh = async (t: TestContext): Promise<WebhookStore> => await (await openDatabase(t)).open()

    test('subscriptions: ids from 1, exactly what was created, scoped by owner', async (t) => {
      const store = await fresh(t)
      const first = await store.createSubscription(record({ description: 'orders' }), T0)
      const second = await store.createSubscription(record({ events: ['plant.deleted'], disabled: true }), T0 + 1)
      const bobs = await store.createSubscription(record({ owner: BOB }), T0 + 2)
      assert.deepEqual(first, {
        id: 1n,
        url: 'https://hooks.example.com/plants',
        events: RESOURCE_EVENT_TYPES,
        description: 'orders',
        disabled: false,
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z'
      })
      assert.equal(second.id, 2n)
      assert.equal('description' in second, false, 'no description means no description property')
      assert.deepEqual(second.events, ['plant.deleted'])
      assert.equal(second.disabled, true)
      assert.equal(bobs.id, 3n)
      assert.deepEqual(await store.getSubscription(ALICE, 1n), first)
      assert.equal(await store.getSubscription(BOB, 1n), undefined, "another owner's subscription is not found")
      assert.equal(await store.getSubscription(ALICE, 3n), undefined)
      assert.equal(await store.getSubscription(ALICE, 99n), undefined)
    })

    test('at most maxPerOwner subscriptions per owner, also when two instances create at once; a delete ' +
      'makes room', async (t) => {
      const database = await openDatabase(t)
      const [a, b] = [await database.open(), await database.open()]
      const outcomes = await Promise.allSettled(
        Array.from({ length: 8 }, async (_, i) => await (i % 2 === 0 ? a : b).createSubscription(record(), T0, 3)))
      assert.equal(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, 3)
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected') {
          assert.ok(outcome.reason instanceof ServiceError)
          assert.equal(outcome.reason.code, 'subscription-limit')
          assert.equal(outcome.reason.message,
            'This token already has 3 webhook subscriptions, the most allowed: delete one first')
        }
      }
      assert.equal((await a.listSubscriptions(ALICE, { limit: 100 })).subscriptions.length, 3)
      // Another owner has a limit of its own; without a limit, none applies.
      assert.equal((await b.createSubscription(record({ owner: BOB }), T0, 1)).url, record().url)
      await a.createSubscription(record(), T0)
      const [first] = (await a.listSubscriptions(ALICE, { limit: 1 })).subscriptions
      assert.ok(await a.deleteSubscription(ALICE, first?.id ?? 0n))
      await assert.rejects(a.createSubscription(record(), T0, 3), ServiceError)
      assert.ok(await a.deleteSubscription(ALICE, 2n))
      assert.ok(await b.createSubscription(record(), T0, 4))
    })

    test('list: by id, keyset cursor, limit and hasMore, only the owner\'s', async (t) => {
      const store = await fresh(t)
      for (let i = 0; i < 5; i++) await store.createSubscription(record({ owner: i === 2 ? BOB : ALICE }), T0)
      const ids = (page: { subscriptions: Array<{ id: bigint }> }): bigint[] => page.subscriptions.map((s) => s.id)
      const first = await store.listSubscriptions(ALICE, { limit: 2 })
      assert.deepEqual(ids(first), [1n, 2n])
      assert.equal(first.hasMore, true)
      const last = await store.listSubscriptions(ALICE, { limit: 2, after: 2n })
      assert.deepEqual(ids(last), [4n, 5n])
      assert.equal(last.hasMore, false, 'an exactly full last page has no more')
      assert.deepEqual(ids(await store.listSubscriptions(BOB, { limit: 10 })), [3n])
      assert.deepEqual(await store.listSubscriptions('c'.repeat(64), { limit: 10 }),
        { subscriptions: [], hasMore: false })
    })

    test('update is a merge patch; updatedAt moves on, even within one millisecond', async (t) => {
      const store = await fresh(t)
      const original = await store.createSubscription(record({ description: 'to remove' }), T0)
      const moved = await store.updateSubscription(ALICE, 1n, { url: 'https://other.example.com/' }, T0)
      assert.deepEqual(moved, { ...original, url: 'https://other.example.com/', updatedAt: isoTime(T0 + 1) })
      const narrowed = await store.updateSubscription(ALICE, 1n,
        { events: ['plant.updated'], description: null, disabled: true }, T0 + 10)
      assert.deepEqual(narrowed?.events, ['plant.updated'])
      assert.equal(narrowed !== undefined && 'description' in narrowed, false)
      assert.equal(narrowed?.disabled, true)
      assert.equal(narrowed?.url, 'https://other.example.com/')
      assert.equal(narrowed?.updatedAt, isoTime(T0 + 10))
      const unchanged = await store.updateSubscription(ALICE, 1n, {}, T0 + 20)
      assert.deepEqual({ ...unchanged, updatedAt: '' }, { ...narrowed, updatedAt: '' })
      assert.equal(await store.updateSubscription(BOB, 1n, { disabled: false }, T0), undefined)
      assert.equal((await store.getSubscription(ALICE, 1n))?.disabled, true, "another owner's patch changed nothing")
    })

    test('delete removes the subscription and its deliveries; another owner cannot', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0)
      await store.createSubscription(record(), T0)
      assert.equal(await store.enqueue(created(1n), T0), 2)
      assert.equal(await store.deleteSubscription(BOB, 1n), false)
      assert.equal(await store.deleteSubscription(ALICE, 1n), true)
      assert.equal(await store.deleteSubscription(ALICE, 1n), false)
      assert.equal(await store.getSubscription(ALICE, 1n), undefined)
      const claimed = await store.claimDue(claimRequest())
      assert.deepEqual(claimed.map((d) => d.subscriptionId), [2n], 'only the remaining subscription has a delivery')
    })

    test('enqueue fans out to every enabled subscription that asked for the type, one body and message ' +
      'id', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0) // 1: all events
      await store.createSubscription(record({ events: ['plant.deleted'] }), T0) // 2: not created
      await store.createSubscription(record({ disabled: true }), T0) // 3: disabled
      await store.createSubscription(record({ owner: BOB, events: ['plant.created', 'plant.updated'] }), T0) // 4
      assert.equal(await store.enqueue(created(9007199254740993n, T0 - 5), T0), 2)
      const claimed = await store.claimDue(claimRequest())
      assert.deepEqual(claimed.map((d) => d.subscriptionId).sort(), [1n, 4n])
      const [a, b] = claimed
      assert.ok(a !== undefined && b !== undefined)
      assert.equal(a.messageId, b.messageId, 'one event, one webhook-id')
      assert.match(a.messageId, /^msg_[A-Za-z0-9_-]{22}$/)
      assert.equal(a.payload, b.payload)
      assert.equal(a.payload, '{"type":"plant.created","timestamp":"2025-12-31T23:59:59.995Z","data":' +
        '{"id":9007199254740993,"name":"Monstera","tag":"tropical",' +
        '"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z"}}')
      assert.equal(a.eventType, 'plant.created')
      assert.equal(a.attempts, 0)
      assert.equal(await store.enqueue(resourceEvent(PLANTS, 'deleted', plant(1n)), T0), 2,
        'subscriptions 1 and 2 (3 is disabled, 4 did not ask)')
      assert.equal(await store.enqueue(resourceEvent(PLANTS, 'updated', plant(1n)), T0), 2)
    })

    test('a subscription receives the events committed after it was created, none from before', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0) // 1
      await store.enqueue(created(1n), T0)
      await store.createSubscription(record(), T0 + 1) // 2: after event 1
      await store.enqueue(created(2n), T0 + 2)
      const claimed = await store.claimDue(claimRequest({ now: T0 + 2 }))
      assert.deepEqual(claimed.map((d) => [d.subscriptionId, /"id":(\d+)/.exec(d.payload)?.[1]]).sort(),
        [[1n, '1'], [1n, '2'], [2n, '2']])
    })

    test('which subscriptions an event goes to is settled when it is taken up: a change in between applies ' +
      'to it', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0) // 1: narrowed after the event
      await store.createSubscription(record(), T0) // 2: disabled after the event
      await store.createSubscription(record({ events: ['plant.deleted'] }), T0) // 3: widened after the event
      await store.enqueue(created(1n), T0)
      await store.updateSubscription(ALICE, 1n, { events: ['plant.deleted'] }, T0)
      await store.updateSubscription(ALICE, 2n, { disabled: true }, T0)
      await store.updateSubscription(ALICE, 3n, { events: ['plant.created'] }, T0)
      const claimed = await store.claimDue(claimRequest())
      assert.deepEqual(claimed.map((d) => d.subscriptionId), [3n])
    })

    test('backlog: every delivery waiting for an enabled subscription, and when the oldest was created', async (t) => {
      const store = await fresh(t)
      assert.deepEqual(await store.backlog(), { pending: 0, oldestCreatedAt: undefined })
      await store.createSubscription(record(), T0) // 1
      await store.createSubscription(record({ events: ['plant.deleted'] }), T0) // 2: not created
      await store.enqueue(created(1n), T0 + 10)
      await store.enqueue(created(2n), T0 + 20)
      assert.deepEqual(await store.backlog(), { pending: 2, oldestCreatedAt: T0 + 10 })
      const [first] = await store.claimDue(claimRequest({ now: T0 + 20, limit: 1 }))
      assert.ok(first !== undefined)
      await store.completeDelivery({
        id: first.id,
        lease: 'instance-a:1',
        attemptedAt: T0 + 30,
        status: 'succeeded',
        statusCode: 204,
        disableSubscription: false,
        failingDisableBefore: T0
      })
      assert.deepEqual(await store.backlog(), { pending: 1, oldestCreatedAt: T0 + 20 })
      await store.updateSubscription(ALICE, 1n, { disabled: true }, T0 + 40)
      assert.deepEqual(await store.backlog(), { pending: 0, oldestCreatedAt: undefined },
        'a disabled subscription waits for nothing')
    })

    test('getDelivery: the event as sent and every recorded attempt, oldest first; listDeliveries filters ' +
      'by status and type', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0)
      await store.createSubscription(record({ owner: BOB }), T0)
      await store.enqueue(created(1n), T0)
      await store.enqueue(resourceEvent(PLANTS, 'deleted', plant(1n)), T0 + 1)
      const claimed = await store.claimDue(claimRequest({ now: T0 + 10 }))
      const first = claimed.find((delivery) => delivery.subscriptionId === 1n && delivery.eventType === 'plant.created')
      assert.ok(first !== undefined)
      const base = { id: first.id, lease: 'instance-a:1', disableSubscription: false, failingDisableBefore: T0 - 1 }
      await store.completeDelivery({
        ...base,
        attemptedAt: T0 + 10,
        durationMs: 12.6,
        status: 'pending',
        nextAttemptAt: T0 + 20,
        statusCode: 503,
        error: 'the receiver answered 503',
        responseBody: 'busy'
      })
      await store.claimDue(claimRequest({ lease: 'instance-a:2', now: T0 + 20 }))
      await store.completeDelivery({
        ...base,
        lease: 'instance-a:2',
        attemptedAt: T0 + 20,
        status: 'pending',
        nextAttemptAt: T0 + 30,
        error: 'timeout: no answer within 5 ms'
      })
      await store.claimDue(claimRequest({ lease: 'instance-a:3', now: T0 + 30 }))
      await store.completeDelivery({
        ...base,
        lease: 'instance-a:3',
        attemptedAt: T0 + 30,
        durationMs: 3,
        status: 'succeeded',
        statusCode: 200,
        responseBody: ''
      })
      const detail = await store.getDelivery(ALICE, 1n, first.id)
      assert.deepEqual(detail, {
        id: first.id,
        eventType: 'plant.created',
        status: 'succeeded',
        attempts: 3,
        lastAttemptAt: isoTime(T0 + 30),
        lastStatusCode: 200,
        createdAt: isoTime(T0),
        webhookId: first.messageId,
        payload: first.payload,
        attemptLog: [
          {
            at: isoTime(T0 + 10),
            durationMs: 13,
            statusCode: 503,
            error: 'the receiver answered 503',
            responseBody: 'busy'
          },
          { at: isoTime(T0 + 20), durationMs: 0, error: 'timeout: no answer within 5 ms' },
          { at: isoTime(T0 + 30), durationMs: 3, statusCode: 200, responseBody: '' }
        ]
      })
      assert.equal(await store.getDelivery(BOB, 1n, first.id), undefined, 'another owner\'s')
      assert.equal(await store.getDelivery(ALICE, 2n, first.id), undefined, 'another subscription\'s')
      assert.equal(await store.getDelivery(ALICE, 1n, 999n), undefined)
      const list = async (query: Partial<DeliveryQuery>): Promise<string[] | undefined> =>
        (await store.listDeliveries(ALICE, 1n, { limit: 10, ...query }))?.deliveries.map(
          (delivery) => `${delivery.eventType} ${delivery.status}`)
      assert.deepEqual(await list({}), ['plant.deleted pending', 'plant.created succeeded'])
      assert.deepEqual(await list({ status: 'succeeded' }), ['plant.created succeeded'])
      assert.deepEqual(await list({ status: 'pending', eventType: 'plant.deleted' }), ['plant.deleted pending'])
      assert.deepEqual(await list({ status: 'failed' }), [])
      assert.deepEqual(await list({ eventType: 'plant.created' }), ['plant.created succeeded'])
      // Its attempts go with the delivery.
      assert.ok(await store.deleteSubscription(ALICE, 1n))
      assert.equal(await store.getDelivery(ALICE, 1n, first.id), undefined)
    })

    test('recoverDeliveries: the owner\'s failed deliveries created since then are pending and due now; ' +
      'nothing else changes', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0)
      await store.createSubscription(record(), T0)
      for (let i = 1; i <= 3; i++) await store.enqueue(created(BigInt(i), T0 + i), T0 + i * 100)
      const claimed = await store.claimDue(claimRequest({ now: T0 + 1000, limit: 10 }))
      assert.equal(claimed.length, 6)
      for (const delivery of claimed) {
        const status = delivery.payload.includes('"id":3') ? 'succeeded' : 'failed'
        await store.completeDelivery({
          id: delivery.id,
          lease: 'instance-a:1',
          attemptedAt: T0 + 1000,
          status,
          disableSubscription: false,
          failingDisableBefore: T0 - 1
        })
      }
      assert.equal(await store.recoverDeliveries(BOB, 1n, T0, T0 + 2000), undefined)
      assert.equal(await store.recoverDeliveries(ALICE, 1n, T0 + 200, T0 + 2000), 1,
        'the second event\'s only: the first is older, the third succeeded')
      const list = (await store.listDeliveries(ALICE, 1n, { limit: 10 }))?.deliveries.map(
        (delivery) => [delivery.status, delivery.nextAttemptAt])
      assert.deepEqual(list, [['succeeded', undefined], ['pending', isoTime(T0 + 2000)], ['failed', undefined]])
      assert.deepEqual((await store.listDeliveries(ALICE, 2n, { status: 'failed', limit: 10 }))?.deliveries.length, 2,
        'another subscription\'s stay failed')
      assert.equal(await store.recoverDeliveries(ALICE, 1n, T0, T0 + 2000), 1)
    })

    test('claim order is fair: round robin between owners, then between an owner\'s subscriptions; skipped ' +
      'owners get none', async (t) => {
      const store = await fresh(t)
      // Alice's three subscriptions have the oldest backlog; Bob's one delivery is the newest.
      for (let i = 0; i < 3; i++) await store.createSubscription(record({ events: ['plant.created'] }), T0)
      await store.createSubscription(record({ owner: BOB, events: ['plant.deleted'] }), T0)
      for (let i = 1; i <= 4; i++) await store.enqueue(created(BigInt(i), T0 + i), T0 + i)
      await store.enqueue(resourceEvent(PLANTS, 'deleted', plant(9n), T0 + 10), T0 + 10)
      // Which are claimed is the fair order's first `limit`; in which order they come back is free.
      const order = (claimed: ClaimedDelivery[]): string[] => claimed.map(
        (delivery) => `${delivery.owner === BOB ? 'bob' : 'alice'}:${delivery.subscriptionId}`).sort()
      const first = await store.claimDue(claimRequest({ now: T0 + 100, limit: 5, perSubscription: 4 }))
      assert.deepEqual(order(first), ['alice:1', 'alice:1', 'alice:2', 'alice:3', 'bob:4'],
        'not the five oldest: those are all Alice\'s')
      await store.releaseDeliveries('instance-a:1', first.map((delivery) => delivery.id))
      const withoutAlice = await store.claimDue(
        claimRequest({ lease: 'instance-a:2', now: T0 + 100, limit: 5, perSubscription: 4, skipOwners: [ALICE] }))
      assert.deepEqual(order(withoutAlice), ['bob:4'])
    })

    test('renewLeases (where instances share the store): only the lease held is extended, and the delivery ' +
      'stays claimed until then', async (t) => {
      const store = await fresh(t)
      if (store.renewLeases === undefined) {
        t.skip('one process per store: no leases to renew')
        return
      }
      await store.createSubscription(record(), T0)
      await store.enqueue(created(1n), T0)
      await store.enqueue(created(2n), T0)
      const claimed = await store.claimDue(claimRequest({ now: T0, leaseMs: 1000 }))
      assert.equal(claimed.length, 2)
      const [kept, other] = claimed as [ClaimedDelivery, ClaimedDelivery]
      await store.renewLeases([{ id: kept.id, lease: 'instance-a:1' }, { id: other.id, lease: 'someone-else:1' }],
        T0 + 5000)
      const later = await store.claimDue(claimRequest({ lease: 'instance-b:1', now: T0 + 2000 }))
      assert.deepEqual(later.map((delivery) => delivery.id), [other.id], 'the lease not held was not extended')
      assert.deepEqual(
        (await store.claimDue(claimRequest({ lease: 'instance-b:2', now: T0 + 5000 }))).map((delivery) => delivery.id),
        [kept.id])
    })

    test('the transactional enqueue commits with the caller\'s transaction, or not at all', async (t) => {
      const database = await openDatabase(t)
      const store = await database.open()
      await store.createSubscription(record(), T0)
      assert.equal(await database.enqueueInTransaction(created(1n), T0, false), 1, 'written inside the transaction')
      assert.deepEqual(await store.claimDue(claimRequest()), [], 'rolled back with it')
      assert.equal(await database.enqueueInTransaction(created(2n), T0, true), 1)
      const claimed = await store.claimDue(claimRequest())
      assert.equal(claimed.length, 1)
      assert.match(claimed[0]?.payload ?? '', /"data":\{"id":2,/)
    })

    test('deliveries: newest first, cursor, hasMore, shape; only the owner sees them', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0)
      for (let i = 1; i <= 3; i++) await store.enqueue(created(BigInt(i)), T0 + i)
      const first = await store.listDeliveries(ALICE, 1n, { limit: 2 })
      assert.deepEqual(first?.deliveries.map((d) => d.id), [3n, 2n])
      assert.equal(first?.hasMore, true)
      assert.deepEqual(first?.deliveries[0], {
        id: 3n,
        eventType: 'plant.created',
        status: 'pending',
        attempts: 0,
        nextAttemptAt: isoTime(T0 + 3),
        createdAt: isoTime(T0 + 3)
      })
      const rest = await store.listDeliveries(ALICE, 1n, { limit: 2, before: 2n })
      assert.deepEqual(rest?.deliveries.map((d) => d.id), [1n])
      assert.equal(rest?.hasMore, false)
      assert.equal(await store.listDeliveries(BOB, 1n, { limit: 2 }), undefined)
      assert.equal(await store.listDeliveries(ALICE, 2n, { limit: 2 }), undefined)
    })

    test('claim: only due deliveries, oldest first, at most limit, each once until its lease runs out', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0)
      for (let i = 1; i <= 4; i++) await store.enqueue(created(BigInt(i)), T0 + i * 10)
      assert.deepEqual(await store.claimDue(claimRequest({ now: T0 })), [], 'nothing is due yet')
      const first = await store.claimDue(claimRequest({ now: T0 + 30, limit: 2 }))
      assert.deepEqual(first.map((d) => d.id), [1n, 2n])
      const second = await store.claimDue(claimRequest({ lease: 'instance-b:1', now: T0 + 30 }))
      assert.deepEqual(second.map((d) => d.id), [3n], 'leased deliveries are not handed out again')
      const later = await store.claimDue(claimRequest({ lease: 'instance-b:2', now: T0 + 30 + 60_000 }))
      assert.deepEqual(later.map((d) => d.id).sort(), [1n, 2n, 3n, 4n], 'expired leases make deliveries due again')
      assert.equal(later[0]?.url, 'https://hooks.example.com/plants')
      assert.deepEqual(later[0]?.secrets, ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'])
    })

    test('claim: at most perSubscription of one subscription, none of skipped or disabled ones', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0) // 1: a backlog
      await store.createSubscription(record(), T0) // 2
      await store.createSubscription(record(), T0) // 3: disabled after enqueue
      for (let i = 1; i <= 5; i++) await store.enqueue(created(BigInt(i)), T0)
      await store.updateSubscription(ALICE, 3n, { disabled: true }, T0)
      const bySubscription = (claimed: Array<{ subscriptionId: bigint }>): bigint[] => claimed.map(
        (d) => d.subscriptionId).sort()
      const claimed = await store.claimDue(claimRequest({ perSubscription: 2, limit: 10 }))
      assert.deepEqual(bySubscription(claimed), [1n, 1n, 2n, 2n])
      const skipping = await store.claimDue(
        claimRequest({ lease: 'instance-a:2', perSubscription: 2, skipSubscriptions: [1n] }))
      assert.deepEqual(bySubscription(skipping), [2n, 2n])
      assert.deepEqual(
        bySubscription(await store.claimDue(claimRequest({ lease: 'instance-a:3', perSubscription: 5 }))),
        [1n, 1n, 1n, 2n])
    })

    test('complete: only under the lease; success, retry later, and final failure recorded', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0)
      await store.enqueue(created(1n), T0)
      await store.enqueue(created(2n), T0)
      const [one, two] = await store.claimDue(claimRequest())
      assert.ok(one !== undefined && two !== undefined)
      const base = { attemptedAt: T0 + 5, disableSubscription: false, failingDisableBefore: T0 - 1000 }
      assert.deepEqual(await store.completeDelivery(
        { ...base, id: one.id, lease: 'someone-else', status: 'succeeded', statusCode: 200 }),
      { recorded: false, subscriptionDisabled: false })
      assert.deepEqual(await store.completeDelivery(
        { ...base, id: one.id, lease: 'instance-a:1', status: 'succeeded', statusCode: 204 }),
      { recorded: true, subscriptionDisabled: false })
      assert.deepEqual(await store.completeDelivery(
        { ...base, id: one.id, lease: 'instance-a:1', status: 'failed', statusCode: 500 }),
      { recorded: false, subscriptionDisabled: false }, 'a completed delivery holds no lease any more')
      await store.completeDelivery({
        ...base,
        id: two.id,
        lease: 'instance-a:1',
        status: 'pending',
        statusCode: 503,
        error: 'the receiver answered 503',
        nextAttemptAt: T0 + 5000
      })
      const page = await store.listDeliveries(ALICE, 1n, { limit: 10 })
      assert.deepEqual(page?.deliveries, [
        {
          id: 2n,
          eventType: 'plant.created',
          status: 'pending',
          attempts: 1,
          lastAttemptAt: isoTime(T0 + 5),
          lastStatusCode: 503,
          lastError: 'the receiver answered 503',
          nextAttemptAt: isoTime(T0 + 5000),
          createdAt: isoTime(T0)
        },
        {
          id: 1n,
          eventType: 'plant.created',
          status: 'succeeded',
          attempts: 1,
          lastAttemptAt: isoTime(T0 + 5),
          lastStatusCode: 204,
          createdAt: isoTime(T0)
        }
      ])
      assert.deepEqual(await store.claimDue(claimRequest({ lease: 'instance-a:2', now: T0 + 4999 })), [],
        'not due before its next attempt')
      const [again] = await store.claimDue(claimRequest({ lease: 'instance-a:3', now: T0 + 5000 }))
      assert.equal(again?.attempts, 1)
      await store.completeDelivery({
        ...base,
        id: two.id,
        lease: 'instance-a:3',
        attemptedAt: T0 + 5001,
        status: 'failed',
        error: 'timeout: no answer'
      })
      const [failed] = (await store.listDeliveries(ALICE, 1n, { limit: 1 }))?.deliveries ?? []
      assert.deepEqual(failed, {
        id: 2n,
        eventType: 'plant.created',
        status: 'failed',
        attempts: 2,
        lastAttemptAt: isoTime(T0 + 5001),
        lastError: 'timeout: no answer',
        createdAt: isoTime(T0)
      }, 'no status code without an answer; no next attempt')
    })

    test('completeDeliveries: each as completeDelivery would, in one call; a lost lease writes nothing for ' +
      'that one only', async (t) => {
      const store = await fresh(t)
      assert.ok(store.completeDeliveries !== undefined)
      assert.deepEqual(await store.completeDeliveries([]), [])
      await store.createSubscription(record(), T0)
      await store.createSubscription(record(), T0)
      for (let i = 1; i <= 3; i++) await store.enqueue(created(BigInt(i)), T0)
      const claimed = await store.claimDue(claimRequest())
      const ids = (subscriptionId: bigint): bigint[] => claimed.filter((d) => d.subscriptionId === subscriptionId).map(
        (d) => d.id).sort()
      const [a, b, c] = ids(1n)
      const [d, e, f] = ids(2n)
      assert.ok(
        a !== undefined && b !== undefined && c !== undefined && d !== undefined && e !== undefined && f !== undefined)
      const base = {
        lease: 'instance-a:1',
        attemptedAt: T0 + 5,
        durationMs: 2,
        disableSubscription: false,
        failingDisableBefore: T0 - 1000
      }
      const gone = { ...base, status: 'failed' as const, statusCode: 410, disableSubscription: true }
      assert.deepEqual(await store.completeDeliveries([
        { ...base, id: a, status: 'succeeded', statusCode: 204, responseBody: 'ok' },
        { ...base, id: b, lease: 'someone-else', status: 'succeeded', statusCode: 200 },
        {
          ...base,
          id: c,
          status: 'pending',
          statusCode: 503,
          error: 'the receiver answered 503',
          nextAttemptAt: T0 + 5000
        },
        { ...gone, id: d },
        { ...gone, id: e }
      ]), [
        { recorded: true, subscriptionDisabled: false },
        { recorded: false, subscriptionDisabled: false },
        { recorded: true, subscriptionDisabled: false },
        { recorded: true, subscriptionDisabled: true },
        { recorded: true, subscriptionDisabled: false }
      ])
      const states = async (subscriptionId: bigint): Promise<string[] | undefined> =>
        (await store.listDeliveries(ALICE, subscriptionId, { limit: 10 }))?.deliveries.map(
          (delivery) => `${delivery.id} ${delivery.status} ${delivery.attempts}`)
      assert.deepEqual(await states(1n), [`${c} pending 1`, `${b} pending 0`, `${a} succeeded 1`])
      assert.deepEqual(await states(2n), [`${f} pending 0`, `${e} failed 1`, `${d} failed 1`])
      assert.deepEqual((await store.getDelivery(ALICE, 1n, a))?.attemptLog,
        [{ at: isoTime(T0 + 5), durationMs: 2, statusCode: 204, responseBody: 'ok' }])
      assert.deepEqual((await store.getDelivery(ALICE, 1n, b))?.attemptLog, [], 'the lost lease wrote nothing')
      assert.equal((await store.getSubscription(ALICE, 2n))?.disabled, true)
      assert.deepEqual(await store.completeDeliveries([{ ...base, id: a, status: 'succeeded', statusCode: 204 }]),
        [{ recorded: false, subscriptionDisabled: false }], 'a completed delivery holds no lease any more')
      const [again] = await store.claimDue(claimRequest({ lease: 'instance-a:2', now: T0 + 5000 }))
      assert.deepEqual([again?.id, again?.attempts], [c, 1])
    })

    test('a very long error is cut short', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0)
      await store.enqueue(created(1n), T0)
      const [one] = await store.claimDue(claimRequest())
      await store.completeDelivery({
        id: one?.id ?? 0n,
        lease: 'instance-a:1',
        attemptedAt: T0,
        status: 'failed',
        error: 'x'.repeat(10_000),
        disableSubscription: false,
        failingDisableBefore: T0 - 1
      })
      const [delivery] = (await store.listDeliveries(ALICE, 1n, { limit: 1 }))?.deliveries ?? []
      assert.equal(delivery?.lastError?.length, 500)
    })

    test('an answer with zero bytes is kept, each as U+FFFD, alone or in a batch beside other rows', async (t) => {
      const store = await fresh(t)
      assert.ok(store.completeDeliveries !== undefined)
      await store.createSubscription(record(), T0)
      await store.createSubscription(record({ owner: BOB }), T0)
      for (let i = 1; i <= 2; i++) await store.enqueue(created(BigInt(i)), T0)
      const claimed = await store.claimDue(claimRequest())
      const [a, b] = claimed.filter((d) => d.subscriptionId === 1n).map((d) => d.id).sort()
      const [c, d] = claimed.filter((d) => d.subscriptionId === 2n).map((d) => d.id).sort()
      assert.ok(a !== undefined && b !== undefined && c !== undefined && d !== undefined)
      const base = {
        lease: 'instance-a:1',
        attemptedAt: T0 + 5,
        durationMs: 2,
        disableSubscription: false,
        failingDisableBefore: T0 - 1000
      }
      const retry = { status: 'pending' as const, nextAttemptAt: T0 + 5000 }
      assert.deepEqual(await store.completeDelivery(
        { ...base, id: a, status: 'succeeded', statusCode: 200, responseBody: 'ok\0zero\0' }),
      { recorded: true, subscriptionDisabled: false })
      assert.deepEqual(await store.completeDeliveries([
        { ...base, id: b, status: 'succeeded', statusCode: 200, responseBody: '\0\uFFFDé' },
        { ...base, id: c, status: 'succeeded', statusCode: 204, responseBody: 'healthy' },
        { ...base, id: d, ...retry, statusCode: 500, error: 'the receiver answered 500\0', responseBody: '\0' }
      ]), [{ recorded: true, subscriptionDisabled: false }, { recorded: true, subscriptionDisabled: false },
        { recorded: true, subscriptionDisabled: false }])
      const log = async (owner: string, subscriptionId: bigint, id: bigint): Promise<unknown> =>
        (await store.getDelivery(owner, subscriptionId, id))?.attemptLog.map(
          ({ statusCode, error, responseBody }) => ({ statusCode, error, responseBody }))
      assert.deepEqual(await log(ALICE, 1n, a),
        [{ statusCode: 200, error: undefined, responseBody: 'ok\uFFFDzero\uFFFD' }])
      assert.deepEqual(await log(ALICE, 1n, b), [{ statusCode: 200, error: undefined, responseBody: '\uFFFD\uFFFDé' }])
      assert.deepEqual(await log(BOB, 2n, c), [{ statusCode: 204, error: undefined, responseBody: 'healthy' }])
      assert.deepEqual(await log(BOB, 2n, d),
        [{ statusCode: 500, error: 'the receiver answered 500\uFFFD', responseBody: '\uFFFD' }])
      const [failing] = (await store.listDeliveries(BOB, 2n, { limit: 10, status: 'pending' }))?.deliveries ?? []
      assert.deepEqual([failing?.attempts, failing?.lastError, failing?.nextAttemptAt],
        [1, 'the receiver answered 500\uFFFD', isoTime(T0 + 5000)])
    })

    test('410 Gone disables the subscription at once; new events skip it', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0)
      await store.enqueue(created(1n), T0)
      await store.enqueue(created(2n), T0)
      const [one, two] = await store.claimDue(claimRequest())
      const gone = {
        lease: 'instance-a:1',
        attemptedAt: T0 + 7,
        status: 'failed' as const,
        statusCode: 410,
        disableSubscription: true,
        failingDisableBefore: 0
      }
      assert.deepEqual(await store.completeDelivery({ ...gone, id: one?.id ?? 0n }),
        { recorded: true, subscriptionDisabled: true })
      assert.deepEqual(await store.completeDelivery({ ...gone, id: two?.id ?? 0n }),
        { recorded: true, subscriptionDisabled: false }, 'already disabled')
      const subscription = await store.getSubscription(ALICE, 1n)
      assert.equal(subscription?.disabled, true)
      assert.equal(subscription?.updatedAt, isoTime(T0 + 7))
      assert.equal(await store.enqueue(created(3n), T0 + 8), 0)
    })

    test('a subscription failing without a success since failingDisableBefore is disabled; a success or ' +
      're-enable resets it', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0)
      const attempt = async (at: number, status: 'succeeded' | 'pending',
        failingDisableBefore: number): Promise<boolean> => {
        await store.enqueue(created(1n), at)
        const [delivery] = await store.claimDue(claimRequest({ lease: `l${at}`, now: at }))
        assert.ok(delivery !== undefined)
        const done = await store.completeDelivery({
          id: delivery.id,
          lease: `l${at}`,
          attemptedAt: at,
          status,
          nextAttemptAt: at + 1e12,
          disableSubscription: false,
          failingDisableBefore
        })
        return done.subscriptionDisabled
      }
      const DAY = 86_400_000
      assert.equal(await attempt(T0, 'pending', T0 - 5 * DAY), false, 'failing since T0 only')
      assert.equal(await attempt(T0 + 3 * DAY, 'pending', T0 - 2 * DAY), false, 'failing for 3 days, not 5')
      assert.equal(await attempt(T0 + 4 * DAY, 'succeeded', T0 - DAY), false)
      assert.equal(await attempt(T0 + 5 * DAY, 'pending', T0), false,
        'the success reset the clock: failing since 5 days after T0')
      assert.equal(await attempt(T0 + 10 * DAY, 'pending', T0 + 5 * DAY), true, 'failing for 5 days')
      assert.equal((await store.getSubscription(ALICE, 1n))?.disabled, true)
      await store.updateSubscription(ALICE, 1n, { disabled: false }, T0 + 11 * DAY)
      assert.equal(await attempt(T0 + 12 * DAY, 'pending', T0 + 7 * DAY), false,
        're-enabling forgot the earlier failures')
    })

    test('release gives deliveries back untouched: due again, no attempt counted', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0)
      await store.enqueue(created(1n), T0)
      await store.enqueue(created(2n), T0)
      const claimed = await store.claimDue(claimRequest())
      await store.releaseDeliveries('someone-else', claimed.map((d) => d.id))
      assert.deepEqual(await store.claimDue(claimRequest({ lease: 'x' })), [], 'another lease cannot release them')
      await store.releaseDeliveries('instance-a:1', claimed.map((d) => d.id))
      const again = await store.claimDue(claimRequest({ lease: 'instance-a:2' }))
      assert.deepEqual(again.map((d) => [d.id, d.attempts]), [[1n, 0], [2n, 0]])
      const [delivery] = (await store.listDeliveries(ALICE, 1n, { limit: 1 }))?.deliveries ?? []
      assert.equal(delivery?.attempts, 0)
      assert.equal(delivery?.lastAttemptAt, undefined)
    })

    test('retry makes a delivery due now; not for a disabled subscription or another owner', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0)
      await store.enqueue(created(1n), T0)
      const [one] = await store.claimDue(claimRequest())
      await store.completeDelivery({
        id: one?.id ?? 0n,
        lease: 'instance-a:1',
        attemptedAt: T0,
        status: 'failed',
        statusCode: 500,
        disableSubscription: false,
        failingDisableBefore: 0
      })
      assert.deepEqual(await store.retryDelivery(BOB, 1n, 1n, T0 + 100), { status: 'not-found' })
      assert.deepEqual(await store.retryDelivery(ALICE, 1n, 2n, T0 + 100), { status: 'not-found' })
      const retried = await store.retryDelivery(ALICE, 1n, 1n, T0 + 100)
      assert.equal(retried.status, 'ok')
      assert.deepEqual(retried.status === 'ok' && retried.delivery, {
        id: 1n,
        eventType: 'plant.created',
        status: 'pending',
        attempts: 1,
        lastAttemptAt: isoTime(T0),
        lastStatusCode: 500,
        nextAttemptAt: isoTime(T0 + 100),
        createdAt: isoTime(T0)
      })
      assert.deepEqual((await store.claimDue(claimRequest({ lease: 'instance-a:2', now: T0 + 100 }))).map((d) => d.id),
        [1n])
      await store.updateSubscription(ALICE, 1n, { disabled: true }, T0)
      assert.deepEqual(await store.retryDelivery(ALICE, 1n, 1n, T0 + 200), { status: 'subscription-disabled' })
    })

    test('rotated secrets: every replaced one signs until its own expiry, newest first, at most 10', async (t) => {
      const store = await fresh(t)
      const { secret: first } = await store.createSubscription(record(), T0)
      const second = 'whsec_c2Vjb25kIHNlY3JldCBmb3IgdGVzdHMgb25seSEh'
      const third = 'whsec_dGhpcmQgc2VjcmV0IGZvciB0ZXN0cyBvbmx5ISEh'
      await store.rotateSecret(ALICE, 1n, second, T0 + 1000, T0)
      await store.rotateSecret(ALICE, 1n, third, T0 + 1500, T0 + 500)
      await store.enqueue(created(1n), T0)
      const signing = async (now: number, lease: string): Promise<string[] | undefined> => {
        const [claimed] = await store.claimDue(claimRequest({ lease, now }))
        await store.releaseDeliveries(lease, [claimed?.id ?? 0n])
        return claimed?.secrets
      }
      assert.deepEqual(await signing(T0 + 999, 'a'), [third, second, first])
      assert.deepEqual(await signing(T0 + 1000, 'b'), [third, second])
      assert.deepEqual(await signing(T0 + 1500, 'c'), [third])
      // A rotation after the first expired keeps only what still signs.
      await store.rotateSecret(ALICE, 1n, first, T0 + 3000, T0 + 1200)
      assert.deepEqual(await signing(T0 + 1200, 'd'), [first, third, second])
      for (let i = 0; i < 12; i++) {
        await store.rotateSecret(ALICE, 1n, `whsec_${String(i).padStart(44, 'A')}`, T0 + 5000, T0 + 1300)
      }
      const many = await signing(T0 + 1300, 'e')
      assert.equal(many?.length, 11)
      assert.deepEqual(many?.slice(0, 2), ['whsec_' + '11'.padStart(44, 'A'), 'whsec_' + '10'.padStart(44, 'A')])
    })

    test('rotated secrets: both sign until the old one expires', async (t) => {
      const store = await fresh(t)
      const { secret: old } = await store.createSubscription(record(), T0)
      const rotated = await store.rotateSecret(ALICE, 1n, 'whsec_bmV3IHNlY3JldCBmb3IgdGVzdHMgb25seSEhISE=', T0 + 1000,
        T0)
      assert.equal(rotated?.secret, 'whsec_bmV3IHNlY3JldCBmb3IgdGVzdHMgb25seSEhISE=')
      assert.equal(rotated?.updatedAt, isoTime(T0 + 1))
      assert.equal(await store.rotateSecret(BOB, 1n, 'whsec_x', T0, T0), undefined)
      await store.enqueue(created(1n), T0)
      const [during] = await store.claimDue(claimRequest({ now: T0 + 999 }))
      assert.deepEqual(during?.secrets, ['whsec_bmV3IHNlY3JldCBmb3IgdGVzdHMgb25seSEhISE=', old])
      await store.releaseDeliveries('instance-a:1', [during?.id ?? 0n])
      const [after] = await store.claimDue(claimRequest({ lease: 'instance-a:2', now: T0 + 1000 }))
      assert.deepEqual(after?.secrets, ['whsec_bmV3IHNlY3JldCBmb3IgdGVzdHMgb25seSEhISE='])
    })

    test('prune: finished deliveries older than the cut, and old ones waiting on a disabled ' +
      'subscription', async (t) => {
      const store = await fresh(t)
      await store.createSubscription(record(), T0) // 1
      await store.createSubscription(record(), T0) // 2: disabled later
      await store.enqueue(created(1n), T0) // deliveries 1 (sub 1), 2 (sub 2): old
      await store.enqueue(created(2n), T0 + 1000) // 3, 4: recent
      const claimed = await store.claimDue(claimRequest({ now: T0 + 1000, perSubscription: 1 }))
      for (const delivery of claimed) {
        await store.completeDelivery({
          id: delivery.id,
          lease: 'instance-a:1',
          attemptedAt: T0 + 1000,
          status: 'succeeded',
          statusCode: 200,
          disableSubscription: false,
          failingDisableBefore: 0
        })
      }
      assert.deepEqual(claimed.map((d) => d.id), [1n, 2n], 'the old ones finished')
      assert.equal(await store.pruneDeliveries(T0 + 500), 2)
      assert.deepEqual((await store.listDeliveries(ALICE, 1n, { limit: 10 }))?.deliveries.map((d) => d.id), [3n])
      assert.deepEqual((await store.listDeliveries(ALICE, 2n, { limit: 10 }))?.deliveries.map((d) => d.id), [4n])
      assert.equal(await store.pruneDeliveries(T0 + 5000), 0, 'pending deliveries of enabled subscriptions stay')
      await store.updateSubscription(ALICE, 2n, { disabled: true }, T0)
      assert.equal(await store.pruneDeliveries(T0 + 5000), 1)
      assert.deepEqual((await store.listDeliveries(ALICE, 2n, { limit: 10 }))?.deliveries, [])
    })

    test('two instances claiming at once never get the same delivery', async (t) => {
      const database = await openDatabase(t)
      const [a, b] = [await database.open(), await database.open()]
      for (let i = 0; i < 4; i++) await a.createSubscription(record(), T0)
      for (let i = 1; i <= 25; i++) await a.enqueue(created(BigInt(i)), T0)
      const seen: bigint[] = []
      const instances: Array<[WebhookStore, string]> = [[a, 'a'], [b, 'b']]
      for (let round = 0; round < 20; round++) {
        const claims = await Promise.all(instances.map(async ([store, name]) =>
          await store.claimDue(claimRequest({ lease: `${name}:${round}`, limit: 3, perSubscription: 2 }))))
        for (const claimed of claims) seen.push(...claimed.map((d) => d.id))
      }
      assert.equal(seen.length, 100, 'every delivery claimed')
      assert.equal(new Set(seen).size, 100, 'none twice')
    })
  })
}
