import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import { PLANTS } from '../../../src/resources/plants.js'
import { DeliveryQueue } from '../../../src/webhooks/delivery-queue.js'
import type { DispatcherEvents, Report } from '../../../src/webhooks/dispatcher-events.js'
import { resourceEvent } from '../../../src/webhooks/events.js'
import { newWebhookSecret } from '../../../src/webhooks/signing.js'
import type { DeliveryCompletion, WebhookStore } from '../../../src/webhooks/store-contract.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { sqliteWebhookDatabase } from '../../helpers/sqlite-webhooks.js'
import { plant } from './store-conformance.js'
import { PLANT_CREATED } from '../../helpers/resources.js'

// The queue over a real SQLite webhook store; failures are the store's, wrapped per test.

const OWNER = 'a'.repeat(64)
const NOW = Date.UTC(2026, 0, 1)
const RECORDED = { recorded: true, subscriptionDisabled: false }

/** A store with one subscription and `deliveries` events for it; the queue over `wrap(store)`. */
async function setup (
  t: TestContext, deliveries: number, wrap = (store: WebhookStore): WebhookStore => store
): Promise<{ store: WebhookStore, queue: DeliveryQueue, errors: string[] }> {
  const store = sqliteWebhookDatabase(cleanupStack(t), 'plant-store-queue-').openWebhookStore()
  const record = { owner: OWNER, url: 'http://127.0.0.1:9/hooks', events: [PLANT_CREATED], disabled: false }
  await store.createSubscription({ ...record, secret: newWebhookSecret() }, NOW)
  for (let i = 1; i <= deliveries; i++) await store.enqueue(resourceEvent(PLANTS, 'created', plant(BigInt(i))), NOW)
  const errors: string[] = []
  return { store, queue: queueOver(wrap(store), errors), errors }
}

function queueOver (store: WebhookStore, errors: string[]): DeliveryQueue {
  const report: Report = (event, ...args) => {
    if (event !== 'store-error') return
    const [{ operation, error }] = args as DispatcherEvents['store-error']
    errors.push(`${operation}: ${error instanceof Error ? error.message : String(error)}`)
  }
  return new DeliveryQueue({
    store,
    instanceId: 'here',
    leaseMs: 60_000,
    retentionMs: 60_000,
    now: () => NOW,
    report
  })
}

/** `store` whose `method` throws `message` while `fail.now` is set. */
function failingWhile (
  fail: { now: boolean }, store: WebhookStore, method: 'claimDue' | 'releaseDeliveries', message: string
): WebhookStore {
  const act = store[method] as (...args: unknown[]) => Promise<unknown>
  return {
    ...store,
    [method]: async (...args: unknown[]) => {
      if (fail.now) throw new Error(message)
      return await act(...args)
    }
  }
}

const succeeded = (id: bigint, lease: string, responseBody = 'ok'): DeliveryCompletion => ({
  id,
  lease,
  attemptedAt: NOW,
  statusCode: 200,
  responseBody,
  status: 'succeeded',
  disableSubscription: false,
  failingDisableBefore: 0
})

describe('delivery queue: claims and completions', () => {
  test('claims under leases named after the instance; a failing claim is reported and claims nothing', async (t) => {
    const fail = { now: true }
    const { queue, errors } = await setup(t, 2, (store) => failingWhile(fail, store, 'claimDue', 'database is locked'))
    const shape = { limit: 10, perSubscription: 10, skipSubscriptions: [] }
    assert.deepEqual(await queue.claim(shape), { lease: 'here:1', claimed: [] })
    assert.deepEqual(errors, ['claim: database is locked'])
    fail.now = false
    const { lease, claimed } = await queue.claim(shape)
    assert.equal(lease, 'here:2')
    assert.deepEqual(claimed.map(({ id }) => id), [1n, 2n])
  })

  test('completions of one turn go in one batch; a batch that fails is written row by row', async (t) => {
    const batches: bigint[][] = []
    let failBatch = false
    const { store, queue, errors } = await setup(t, 3, (store) => ({
      ...store,
      completeDeliveries: async (completions) => {
        batches.push(completions.map(({ id }) => id))
        if (failBatch) throw new Error('statement too long')
        return await (store.completeDeliveries?.(completions) ?? [])
      }
    }))
    const { lease, claimed } = await queue.claim({ limit: 3, perSubscription: 3, skipSubscriptions: [] })
    assert.deepEqual(claimed.map(({ id }) => id), [1n, 2n, 3n])
    const results = await Promise.all([queue.complete(succeeded(1n, lease)), queue.complete(succeeded(2n, 'other:1'))])
    assert.deepEqual(results, [RECORDED, { recorded: false, subscriptionDisabled: false }])
    failBatch = true
    assert.deepEqual(await queue.complete(succeeded(3n, lease)), RECORDED)
    assert.deepEqual(batches, [[1n, 2n], [3n]])
    assert.deepEqual(errors, ['complete: statement too long'])
    const page = await store.listDeliveries(OWNER, 1n, { limit: 10 })
    assert.deepEqual(page?.deliveries.map(({ id, status }) => [id, status]),
      [[3n, 'succeeded'], [2n, 'pending'], [1n, 'succeeded']])
  })

  test("a completion the store refuses is written again without the receiver's answer", async (t) => {
    const { store, queue, errors } = await setup(t, 1, (store) => {
      const oneByOne: WebhookStore = {
        ...store,
        completeDelivery: async (completion) => {
          if (completion.responseBody !== undefined) throw new Error('invalid byte sequence')
          return await store.completeDelivery(completion)
        }
      }
      delete oneByOne.completeDeliveries
      return oneByOne
    })
    const { lease } = await queue.claim({ limit: 1, perSubscription: 1, skipSubscriptions: [] })
    assert.deepEqual(await queue.complete(succeeded(1n, lease, '\u0000')), RECORDED)
    assert.deepEqual(errors, ['complete: invalid byte sequence'])
    const detail = await store.getDelivery(OWNER, 1n, 1n)
    assert.deepEqual(detail?.attemptLog.map(({ statusCode, responseBody }) => [statusCode, responseBody]),
      [[200, undefined]])
  })
})

describe('delivery queue: leases', () => {
  test('release gives deliveries back, due at once; a failing release is reported', async (t) => {
    const fail = { now: false }
    const lost = (store: WebhookStore): WebhookStore =>
      failingWhile(fail, store, 'releaseDeliveries', 'connection lost')
    const { queue, errors } = await setup(t, 1, lost)
    const shape = { limit: 1, perSubscription: 1, skipSubscriptions: [] }
    const first = await queue.claim(shape)
    await queue.release(first.lease, first.claimed.map(({ id }) => id))
    const again = await queue.claim(shape)
    assert.deepEqual(again.claimed.map(({ id }) => id), [1n])
    fail.now = true
    await queue.release(again.lease, [1n])
    assert.deepEqual(errors, ['release: connection lost'])
    assert.deepEqual((await queue.claim(shape)).claimed, [], 'still leased')
  })
})
