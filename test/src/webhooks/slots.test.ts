import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { DeliverySlots, type ClaimPlan, type SlotOptions } from '../../../src/webhooks/slots.js'

// The scheduler's decisions alone: no store, no HTTP. The clock is a number the test moves.

const A = 'a'.repeat(64)
const B = 'b'.repeat(64)

interface Held {
  /** The request has ended: the slot is free, the completion is still being written. */
  sent: () => void
  /** The attempt is over. */
  end: () => Promise<void>
}

function setup (options: Partial<SlotOptions> = {}): {
  slots: DeliverySlots
  hold: (subscriptionId: bigint, owner?: string) => Held
  clock: { now: number }
  busy: { now: boolean }
  calls: { free: number, settled: number }
} {
  const clock = { now: 1000 }
  const busy = { now: false }
  const calls = { free: 0, settled: 0 }
  const slots = new DeliverySlots({
    concurrency: 4,
    perSubscription: 2,
    fastAttemptMs: 100,
    busyIntervalMs: 100,
    apiBusy: () => busy.now,
    onFree: () => { calls.free++ },
    onSettled: () => { calls.settled++ },
    clock: () => clock.now,
    ...options
  })
  const hold = (subscriptionId: bigint, owner = A): Held => {
    let sent = (): void => {}
    let end = (): void => {}
    const running = slots.hold(subscriptionId, owner, async (markSent) => {
      sent = markSent
      await new Promise<void>((resolve) => { end = resolve })
    })
    return { sent: () => { sent() }, end: async () => { end(); await running } }
  }
  return { slots, hold, clock, busy, calls }
}

const claimOf = (plan: ClaimPlan): Extract<ClaimPlan, { kind: 'claim' }> => {
  assert.equal(plan.kind, 'claim')
  return plan as Extract<ClaimPlan, { kind: 'claim' }>
}

describe('delivery slots: fairness', () => {
  test('an idle dispatcher claims up to concurrency, perSubscription each, skipping nothing', () => {
    const { slots } = setup()
    assert.deepEqual(slots.plan(), {
      kind: 'claim', busy: false, shape: { limit: 4, perSubscription: 2, skipSubscriptions: [], skipOwners: [] }
    })
  })

  test('a subscription at its allowance is skipped; with every slot sending nothing is claimed', async () => {
    const { slots, hold } = setup()
    const first = hold(1n)
    hold(1n)
    assert.deepEqual(claimOf(slots.plan()).shape,
      { limit: 2, perSubscription: 2, skipSubscriptions: [1n], skipOwners: [] })
    hold(2n)
    hold(3n)
    assert.deepEqual(slots.plan(), { kind: 'full' })
    assert.equal(slots.inFlight, 4)
    await first.end()
    assert.deepEqual(claimOf(slots.plan()).shape.skipSubscriptions, [])
    assert.equal(slots.inFlight, 3)
  })

  test('a slot is free once its request has ended; up to concurrency more may be writing completions', () => {
    const { slots, hold, calls } = setup()
    const held = [hold(1n), hold(2n), hold(3n), hold(4n)]
    assert.deepEqual(slots.plan(), { kind: 'full' })
    held[0]?.sent()
    held[0]?.sent()
    assert.equal(calls.free, 1, 'a slot frees once')
    assert.equal(claimOf(slots.plan()).shape.limit, 1)
    for (const { sent } of held) sent()
    for (let i = 0; i < 4; i++) hold(BigInt(10 + i), B)
    assert.equal(slots.inFlight, 8)
    assert.deepEqual(slots.plan(), { kind: 'full' }, 'at most 2 × concurrency in flight')
  })

  test('with two owners one holds at most its share, half the slots; alone it may hold them all', async () => {
    const { slots, hold } = setup()
    hold(1n)
    hold(2n)
    assert.deepEqual(claimOf(slots.plan()).shape.skipOwners, [])
    assert.equal(slots.mayStart(3n, A, false), true)
    slots.owners = 2
    assert.deepEqual(claimOf(slots.plan()).shape.skipOwners, [A])
    assert.equal(slots.mayStart(3n, A, false), false)
    assert.equal(slots.mayStart(3n, B, false), true)
  })

  test('with several owners each holds its share, concurrency / owners (at least one), and what ' +
    'its fast receivers earned', () => {
    const { slots, hold } = setup({ concurrency: 10 })
    slots.owners = 6
    hold(1n, A)
    assert.equal(slots.mayStart(2n, A, false), false, 'a sixth of ten slots is one')
    assert.deepEqual(claimOf(slots.plan()).shape.skipOwners, [A])
    for (const owner of ['c', 'd', 'e', 'f']) hold(3n, owner.repeat(64))
    assert.equal(slots.mayStart(4n, B, false), true, 'five owners that hold their share leave the sixth its own')
    slots.answered(1n, 204, 10)
    assert.equal(slots.mayStart(2n, A, false), true, 'a fast answer earns its owner one more')
    assert.equal(claimOf(slots.plan()).shape.skipOwners?.includes(A), false)
    slots.answered(1n, 204, 500)
    assert.equal(slots.mayStart(2n, A, false), false, 'a slow one takes it back')
    slots.owners = 20
    assert.equal(slots.mayStart(4n, B, false), true, 'more owners than slots: one each')
    hold(4n, B)
    assert.equal(slots.mayStart(5n, B, false), false)
  })

  test('each fast 2xx earns one more slot, up to concurrency; a slow answer or a failure takes them back', () => {
    const { slots } = setup()
    for (let i = 0; i < 5; i++) slots.answered(1n, 204, 100)
    assert.equal(claimOf(slots.plan()).shape.perSubscription, 4, 'concurrency at most')
    slots.answered(2n, 200, 10)
    slots.answered(1n, 204, 101)
    assert.equal(claimOf(slots.plan()).shape.perSubscription, 3, 'subscription 2 has earned one')
    slots.answered(2n, 503, 10)
    assert.equal(claimOf(slots.plan()).shape.perSubscription, 2)
    slots.answered(2n, undefined, 10)
    assert.equal(claimOf(slots.plan()).shape.perSubscription, 2)
  })

  test('a subscription that earned slots may have more in flight than perSubscription', () => {
    const { slots, hold } = setup()
    slots.answered(1n, 204, 1)
    hold(1n)
    hold(1n)
    assert.equal(slots.mayStart(1n, A, false), true)
    assert.deepEqual(claimOf(slots.plan()).shape.skipSubscriptions, [])
    hold(1n)
    assert.equal(slots.mayStart(1n, A, false), false)
    assert.deepEqual(claimOf(slots.plan()).shape.skipSubscriptions, [1n])
  })
})

describe('delivery slots: pacing and settling', () => {
  test('while the API is busy: one attempt at a time, started busyIntervalMs apart at least', async () => {
    const { slots, hold, clock, busy } = setup()
    busy.now = true
    assert.deepEqual(slots.plan(), {
      kind: 'claim', busy: true, shape: { limit: 1, perSubscription: 2, skipSubscriptions: [], skipOwners: [] }
    })
    const first = hold(1n)
    first.sent()
    assert.deepEqual(slots.plan(), { kind: 'full' }, 'its completion is written before the next starts')
    await first.end()
    clock.now += 30
    assert.deepEqual(slots.plan(), { kind: 'wait', ms: 70 })
    assert.equal(slots.paceWait(true), 70)
    busy.now = false
    assert.equal(claimOf(slots.plan()).shape.limit, 4, 'not busy: no pace, every slot')
    assert.equal(slots.paceWait(false), 0)
    busy.now = true
    clock.now += 70
    assert.equal(claimOf(slots.plan()).busy, true)
  })

  test('an attempt that rejects still frees its slot and settles', async () => {
    const { slots, calls } = setup()
    await assert.rejects(slots.hold(1n, A, async () => { throw new Error('boom') }), /boom/)
    assert.deepEqual(calls, { free: 1, settled: 1 })
    assert.equal(slots.inFlight, 0)
    await slots.allSettled()
  })
})
