import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { describe, test, type TestContext } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { WebhookDispatcher, type AttemptEvent, type DispatcherOptions } from '../../../src/webhooks/dispatcher.js'
import type { AttemptTrace } from '../../../src/webhooks/dispatcher-events.js'
import { PLANTS } from '../../../src/resources/plants.js'
import { resourceEvent, type ResourceChange } from '../../../src/webhooks/events.js'
import type { Plant } from '../../../src/resources/plants.js'
import { WebhookService } from '../../../src/webhooks/service.js'
import type {
  DeliveryCompletion, WebhookDelivery, WebhookStore,
  WebhookSubscription
} from '../../../src/webhooks/store-contract.js'
import type { AddressPolicy } from '../../../src/webhooks/url-policy.js'
import { USER_AGENT } from '../../../src/webhooks/user-agent.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { sqliteWebhookDatabase } from '../../helpers/sqlite-webhooks.js'
import { PLANT_CREATED, PLANT_DELETED, PLANT_UPDATED, RESOURCE_EVENT_TYPES } from '../../helpers/resources.js'
import { startReceiver, until, verifyWebhook, type WebhookReceiver } from '../../helpers/webhook-receiver.js'
import { plant } from './store-conformance.js'

// Deliveries go to a receiver on 127.0.0.1 only (allowPrivate); schedules are milliseconds long.

const OWNER = 'a'.repeat(64)
const PACKAGE_VERSION = (JSON.parse(
  readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version: string }).version
const loopback: AddressPolicy = {
  allowPrivate: true,
  resolve: async () => { throw new Error('no DNS in these tests') }
}

interface Fixture {
  store: WebhookStore
  service: WebhookService
  receiver: WebhookReceiver
  dispatcher: WebhookDispatcher
  attempts: AttemptEvent[]
  subscribe: (path?: string, events?: string[]) => Promise<WebhookSubscription>
  /** Enqueues a plant event the way a plant write will (in its own transaction here), then wakes the dispatcher. */
  publish: (event?: { change?: ResourceChange, plant?: Plant }) => Promise<number>
  deliveries: (subscriptionId: bigint) => Promise<WebhookDelivery[]>
  newDispatcher: (options?: Partial<DispatcherOptions>) => WebhookDispatcher
}

async function setup (t: TestContext, options: Partial<DispatcherOptions> = {}): Promise<Fixture> {
  const cleanup = cleanupStack(t)
  const store = sqliteWebhookDatabase(cleanup, 'plant-store-dispatcher-').openWebhookStore()
  const receiver = await startReceiver(cleanup)
  const attempts: AttemptEvent[] = []
  const newDispatcher = (overrides: Partial<DispatcherOptions> = {}): WebhookDispatcher => {
    const dispatcher = new WebhookDispatcher({
      store,
      policy: loopback,
      pollIntervalMs: 20,
      schedule: [30, 30],
      jitter: 0,
      timeoutMs: 1000,
      ...options,
      ...overrides
    })
    dispatcher.on('attempt', (attempt) => attempts.push(attempt))
    // Stopped before the store closes (the stack is last in, first out).
    cleanup.after(async () => { await dispatcher.stop(0) })
    return dispatcher
  }
  const dispatcher = newDispatcher()
  const service = new WebhookService({
    store, policy: loopback, lookupTimeoutMs: 2000, eventTypes: RESOURCE_EVENT_TYPES, onDue: () => { dispatcher.wake() }
  })
  let plantId = 0n
  return {
    store,
    service,
    receiver,
    dispatcher,
    attempts,
    subscribe: async (path = '/hooks',
      events) => await service.createSubscription(OWNER,
      { url: `${receiver.origin}${path}`, ...(events !== undefined && { events }) }),
    publish: async (event = {}) => {
      const count = await store.enqueue(
        resourceEvent(PLANTS, event.change ?? 'created', event.plant ?? plant(++plantId)), Date.now())
      dispatcher.wake()
      return count
    },
    deliveries: async (subscriptionId) => (await service.listDeliveries(OWNER, subscriptionId,
      { limit: 100 })).deliveries,
    newDispatcher
  }
}

describe('webhook dispatcher', () => {
  test('delivers an event as a Standard Webhook that verifies with standardwebhooks', async (t) => {
    const { dispatcher, subscribe, publish, receiver, deliveries, attempts } = await setup(t)
    const subscription = await subscribe()
    await dispatcher.start()
    const before = Math.floor(Date.now() / 1000)
    assert.equal(await publish({ change: 'updated', plant: { ...plant(9007199254740993n), name: 'Fern' } }), 1)
    const [request] = await receiver.waitFor(1)
    assert.ok(request !== undefined)
    assert.equal(request.method, 'POST')
    assert.equal(request.url, '/hooks')
    assert.equal(request.headers['content-type'], 'application/json')
    assert.equal(request.headers['user-agent'], USER_AGENT)
    assert.equal(USER_AGENT, `plant-store/${PACKAGE_VERSION}`)
    assert.match(String(request.headers['webhook-id']), /^msg_/)
    const timestamp = Number(request.headers['webhook-timestamp'])
    assert.ok(timestamp >= before && timestamp <= before + 2, 'unix seconds of the attempt')
    assert.match(String(request.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/)
    const event = verifyWebhook(subscription.secret, request) as Record<string, unknown>
    assert.equal(event.type, PLANT_UPDATED)
    assert.match(String(event.timestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    assert.match(request.body, /"data":\{"id":9007199254740993,"name":"Fern",/,
      'the int64 id exactly, as the API writes it')
    await until('the delivery is recorded', async () => (await deliveries(subscription.id))[0]?.status === 'succeeded')
    const [delivery] = await deliveries(subscription.id)
    assert.equal(delivery?.attempts, 1)
    assert.equal(delivery?.lastStatusCode, 204)
    assert.equal(delivery?.nextAttemptAt, undefined)
    assert.deepEqual(attempts.map((a) => [a.status, a.attempt, a.statusCode, a.recorded]),
      [['succeeded', 1, 204, true]])
  })

  test('wake() starts delivering at once, without waiting for the poll', async (t) => {
    const { dispatcher, subscribe, publish, receiver } = await setup(t, { pollIntervalMs: 60_000 })
    await subscribe()
    await dispatcher.start()
    await new Promise((resolve) => setTimeout(resolve, 30))
    const started = Date.now()
    await publish()
    await receiver.waitFor(1)
    assert.ok(Date.now() - started < 1000, `delivered ${Date.now() - started} ms after the wake`)
  })

  test('failures are retried on the schedule with the same webhook-id and body until a 2xx', async (t) => {
    const { dispatcher, subscribe, publish, receiver, deliveries, attempts } = await setup(t)
    const subscription = await subscribe()
    let answered = 0
    receiver.respond((_request, res) => { res.writeHead(++answered < 3 ? 500 : 200).end() })
    await dispatcher.start()
    await publish()
    const requests = await receiver.waitFor(3)
    assert.equal(new Set(requests.map((r) => r.headers['webhook-id'])).size, 1, 'one webhook-id on every attempt')
    assert.equal(new Set(requests.map((r) => r.body)).size, 1)
    for (const request of requests) verifyWebhook(subscription.secret, request)
    await until('succeeded', async () => (await deliveries(subscription.id))[0]?.status === 'succeeded')
    assert.deepEqual(attempts.map((a) => [a.attempt, a.status, a.statusCode]),
      [[1, 'pending', 500], [2, 'pending', 500], [3, 'succeeded', 200]])
    assert.equal(attempts[0]?.error, 'the receiver answered 500')
    assert.equal((await deliveries(subscription.id))[0]?.attempts, 3)
  })

  test('once the schedule is spent the delivery has failed, and is not attempted again', async (t) => {
    const { dispatcher, subscribe, publish, receiver, deliveries } = await setup(t, { schedule: [20] })
    const subscription = await subscribe()
    receiver.respond((_request, res) => { res.writeHead(503).end() })
    await dispatcher.start()
    await publish()
    await until('failed', async () => (await deliveries(subscription.id))[0]?.status === 'failed')
    await new Promise((resolve) => setTimeout(resolve, 100))
    assert.equal(receiver.requests.length, 2)
    const [delivery] = await deliveries(subscription.id)
    assert.equal(delivery?.attempts, 2)
    assert.equal(delivery?.lastStatusCode, 503)
    assert.equal(delivery?.lastError, 'the receiver answered 503')
  })

  test('redirects, timeouts and refused connections are failures, retried', async (t) => {
    // Long enough that a loaded machine does not time out the answered attempts too.
    const { dispatcher, subscribe, publish, receiver, attempts } = await setup(t,
      { timeoutMs: 1000, schedule: [10, 10] })
    await subscribe()
    let answered = 0
    receiver.respond((_request, res) => {
      answered++
      if (answered === 1) res.writeHead(302, { location: 'https://example.com/' }).end()
      else if (answered === 3) res.writeHead(200).end()
      // the second request gets no answer: a timeout
    })
    await dispatcher.start()
    await publish()
    await until('three attempts', () => attempts.length === 3)
    assert.deepEqual(attempts.map((a) => a.status), ['pending', 'pending', 'succeeded'])
    assert.equal(attempts[0]?.error, 'the receiver answered 302, a redirect: redirects are not followed')
    assert.equal(attempts[0]?.statusCode, 302)
    assert.equal(attempts[1]?.error, 'timeout: no answer within 1000 ms')
    assert.equal(attempts[1]?.statusCode, undefined)
  })

  test('410 Gone disables the subscription at once; later events are not enqueued for it', async (t) => {
    const { dispatcher, subscribe, publish, receiver, service } = await setup(t)
    const subscription = await subscribe()
    const disabled: unknown[] = []
    dispatcher.on('subscription-disabled', (event) => disabled.push(event))
    receiver.respond((_request, res) => { res.writeHead(410).end() })
    await dispatcher.start()
    await publish()
    await until('disabled', async () => (await service.getSubscription(OWNER, subscription.id)).disabled)
    assert.deepEqual(disabled, [{ subscriptionId: subscription.id, reason: 'gone' }])
    const [delivery] = (await service.listDeliveries(OWNER, subscription.id, { limit: 1 })).deliveries
    assert.equal(delivery?.status, 'failed')
    assert.equal(delivery?.attempts, 1, 'no retry after 410')
    assert.equal(await publish(), 0)
  })

  test('a subscription whose attempts all fail for disableAfterMs is disabled', async (t) => {
    const { dispatcher, subscribe, publish, receiver, service } = await setup(t,
      { schedule: [30, 30, 30, 30, 30, 30], disableAfterMs: 50 })
    const subscription = await subscribe()
    const disabled: unknown[] = []
    dispatcher.on('subscription-disabled', (event) => disabled.push(event))
    receiver.respond((_request, res) => { res.writeHead(500).end() })
    await dispatcher.start()
    await publish()
    await until('disabled', async () => (await service.getSubscription(OWNER, subscription.id)).disabled)
    assert.deepEqual(disabled, [{ subscriptionId: subscription.id, reason: 'failing' }])
    const count = receiver.requests.length
    assert.ok(count >= 2 && count <= 4, `${count} attempts`)
    await new Promise((resolve) => setTimeout(resolve, 100))
    assert.equal(receiver.requests.length, count, 'a disabled subscription gets nothing more')
  })

  test('deliveries to a subscription not matching the event, or disabled, are never made', async (t) => {
    const { dispatcher, subscribe, publish, receiver, service } = await setup(t)
    await subscribe('/deleted-only', [PLANT_DELETED])
    const paused = await subscribe('/paused')
    await service.updateSubscription(OWNER, paused.id, { disabled: true })
    const active = await subscribe('/active')
    await dispatcher.start()
    assert.equal(await publish({ change: 'created' }), 1)
    await receiver.waitFor(1)
    await new Promise((resolve) => setTimeout(resolve, 60))
    assert.deepEqual(receiver.requests.map((r) => r.url), ['/active'])
    assert.equal(active.disabled, false)
  })

  test('concurrency bounds the attempts in flight', async (t) => {
    const { dispatcher, subscribe, publish, receiver } = await setup(t, { concurrency: 3, perSubscription: 10 })
    const warnings: string[] = []
    const onWarning = (warning: Error): void => { warnings.push(warning.message) }
    process.on('warning', onWarning)
    t.after(() => { process.off('warning', onWarning) })
    let inFlight = 0
    let most = 0
    receiver.respond(async (_request, res) => {
      most = Math.max(most, ++inFlight)
      await new Promise((resolve) => setTimeout(resolve, 30))
      inFlight--
      res.writeHead(200).end()
    })
    for (let i = 0; i < 4; i++) await subscribe(`/s${i}`)
    await dispatcher.start()
    for (let i = 0; i < 3; i++) await publish()
    await receiver.waitFor(12)
    assert.equal(most, 3)
    assert.deepEqual(warnings, [])
  })

  test('while the API is busy, deliveries yield to it: one attempt at a time, all of concurrency again ' +
    'once it is not', async (t) => {
    let busy = true
    const { dispatcher, subscribe, publish, receiver } = await setup(t,
      { concurrency: 4, perSubscription: 4, apiBusy: () => busy })
    let inFlight = 0
    let most = 0
    const answers: Array<() => void> = []
    receiver.respond((_request, res) => {
      most = Math.max(most, ++inFlight)
      answers.push(() => { inFlight--; res.writeHead(200).end() })
    })
    await subscribe()
    await dispatcher.start()
    for (let i = 0; i < 8; i++) await publish()
    await receiver.waitFor(1)
    // Every wake (the publishes, the poll every 20 ms) finds the one slot taken.
    await new Promise((resolve) => setTimeout(resolve, 100))
    assert.equal(dispatcher.inFlight, 1)
    assert.equal(receiver.requests.length, 1)
    answers.shift()?.()
    await receiver.waitFor(2)
    await new Promise((resolve) => setTimeout(resolve, 60))
    assert.equal(receiver.requests.length, 2, 'still one at a time')
    busy = false
    answers.shift()?.()
    await receiver.waitFor(6)
    assert.equal(most, 4)
    while (answers.length > 0 || receiver.requests.length < 8) {
      answers.shift()?.()
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    await until('all recorded', () => dispatcher.inFlight === 0)
    assert.equal(receiver.requests.length, 8)
  })

  /**
   * A dispatcher whose receiver answers at once, started, with `count` events published: when each
   * attempt started, as the instant its slot was taken, read off the pace's own clock (the last reading
   * before the attempt's trace hook runs, in the same step). The time of the trace itself would carry
   * whatever a busy machine put between the two (a preemption, a collection) for one start and not
   * the next; arrival times at the receiver, each request's way there as well.
   */
  async function startsOf (t: TestContext, options: Parameters<typeof setup>[1],
    count: number): Promise<{ starts: number[] } & Awaited<ReturnType<typeof setup>>> {
    const starts: number[] = []
    let reading = Number.NaN
    const clock = (): number => {
      reading = performance.now()
      return reading
    }
    const traceAttempt = (): AttemptTrace => {
      starts.push(reading)
      return { headers: {}, end: () => {} }
    }
    const context = await setup(t, { ...options, clock, traceAttempt })
    context.receiver.respond((_request, res) => { res.writeHead(200).end() })
    await context.subscribe()
    await context.dispatcher.start()
    for (let i = 0; i < count; i++) await context.publish()
    await context.receiver.waitFor(count)
    return { ...context, starts }
  }

  /** The gaps between consecutive starts, asserted to be at least `atLeast` ms each (less a float's rounding). */
  function assertPaced (starts: readonly number[], atLeast: number): void {
    const gaps = starts.slice(1).map((at, i) => at - (starts[i] ?? 0))
    assert.equal(gaps.length, starts.length - 1)
    for (const gap of gaps) {
      assert.ok(gap >= atLeast - 1e-6, `attempts ${gaps.map((g) => g.toFixed(1)).join(', ')} ms apart`)
    }
  }

  test('while the API is busy, attempts start at least busyIntervalMs apart, however fast the receiver ' +
    'answers; at once when it is not', async (t) => {
    let busy = true
    const { dispatcher, publish, receiver, starts } = await startsOf(t,
      { concurrency: 4, perSubscription: 4, busyIntervalMs: 60, apiBusy: () => busy }, 4)
    // Back to back, the four would start within a few milliseconds.
    assertPaced(starts, 60)
    busy = false
    for (let i = 0; i < 4; i++) await publish()
    await receiver.waitFor(8)
    await until('all recorded', () => dispatcher.inFlight === 0)
  })

  test('by default, busy attempts start at least 100 ms apart (DEFAULT_BUSY_INTERVAL_MS: at most 10 a ' +
    'second)', async (t) => {
    const { dispatcher, starts } = await startsOf(t, { concurrency: 4, perSubscription: 4, apiBusy: () => true }, 4)
    assertPaced(starts, 100)
    await until('all recorded', () => dispatcher.inFlight === 0)
  })

  test('many attempts in flight at once raise no listener-leak warning', async (t) => {
    const { dispatcher, subscribe, publish, receiver } = await setup(t, { concurrency: 30, perSubscription: 30 })
    const warnings: string[] = []
    const onWarning = (warning: Error): void => { warnings.push(warning.message) }
    process.on('warning', onWarning)
    t.after(() => { process.off('warning', onWarning) })
    const answers: Array<() => void> = []
    receiver.respond((_request, res) => { answers.push(() => { res.writeHead(200).end() }) })
    await subscribe()
    await dispatcher.start()
    for (let i = 0; i < 25; i++) await publish()
    await receiver.waitFor(25)
    assert.equal(dispatcher.inFlight, 25)
    for (const answer of answers.splice(0)) answer()
    await until('all recorded', () => dispatcher.inFlight === 0)
    assert.deepEqual(warnings, [])
  })

  test('a slow receiver holds at most perSubscription slots: the others are still served', async (t) => {
    const { dispatcher, subscribe, publish, receiver } = await setup(t,
      { concurrency: 4, perSubscription: 1, timeoutMs: 5000 })
    const hanging: Array<() => void> = []
    receiver.respond((request, res) => {
      if (request.url === '/slow') hanging.push(() => { res.writeHead(200).end() })
      else res.writeHead(200).end()
    })
    await subscribe('/slow')
    await subscribe('/fast')
    await dispatcher.start()
    for (let i = 0; i < 10; i++) await publish()
    await until('the fast receiver has all ten', () => receiver.requests.filter((r) => r.url === '/fast').length === 10)
    await until('the fast attempts are all recorded', () => dispatcher.inFlight === 1)
    assert.equal(receiver.requests.filter((r) => r.url === '/slow').length, 1,
      'one slow attempt in flight, the rest wait')
    for (const answer of hanging.splice(0)) answer()
    await until('the slow one moves on', () => receiver.requests.filter((r) => r.url === '/slow').length >= 2)
    for (const answer of hanging.splice(0)) answer()
  })

  /** The store, with every completeDeliveries call logged (the ids, in order) and held while `hold` is set. */
  function batching (store: WebhookStore): {
    store: WebhookStore,
    batches: bigint[][],
    claims: string[],
    hold: (gate: Promise<void> | undefined) => void
  } {
    const batches: bigint[][] = []
    const claims: string[] = []
    let gate: Promise<void> | undefined
    const completeDeliveries = store.completeDeliveries
    assert.ok(completeDeliveries !== undefined)
    return {
      store: {
        ...store,
        claimDue: async (request) => {
          const claimed = await store.claimDue(request)
          if (claimed.length > 0) claims.push(request.lease)
          return claimed
        },
        completeDeliveries: async (completions: readonly DeliveryCompletion[]) => {
          batches.push(completions.map(({ id }) => id))
          await gate
          return await completeDeliveries(completions)
        }
      },
      batches,
      claims,
      hold: (next) => { gate = next }
    }
  }

  test('completions that come in while a batch is written go in the next one; a lost lease fails only its ' +
    'own', async (t) => {
    const { store, subscribe, publish, receiver, deliveries, attempts, newDispatcher } = await setup(t)
    const wrapped = batching(store)
    const subscription = await subscribe()
    const answers = new Map<string, () => void>()
    receiver.respond(
      (request,
        res) => {
        answers.set(/"data":\{"id":(\d+)/.exec(request.body)?.[1] ?? '',
          () => { res.writeHead(204).end() })
      })
    // Counts answers read to their end: what follows until the completion is queued takes no I/O.
    let answered = 0
    const request = (url: URL, options: Parameters<typeof httpRequest>[1]): ReturnType<typeof httpRequest> => {
      const req = httpRequest(url, options)
      req.on('response', (res) => { res.on('end', () => { answered++ }) })
      return req
    }
    for (let i = 0; i < 3; i++) await publish()
    const dispatcher = newDispatcher({
      store: wrapped.store,
      concurrency: 3,
      perSubscription: 3,
      pollIntervalMs: 60_000,
      request
    })
    await dispatcher.start()
    await receiver.waitFor(3)
    const [lease] = wrapped.claims
    assert.ok(lease !== undefined)
    // Its lease runs out and another instance takes delivery 3 over while it is in flight here.
    await store.releaseDeliveries(lease, [3n])
    assert.deepEqual(
      (await store.claimDue(
        {
          lease: 'other:1',
          now: Date.now(),
          leaseMs: 60_000,
          limit: 10,
          perSubscription: 10,
          skipSubscriptions: []
        })).map(({ id }) => id), [3n])
    let open = (): void => {}
    wrapped.hold(new Promise((resolve) => { open = resolve }))
    answers.get('1')?.()
    await until('the first batch is being written', () => wrapped.batches.length === 1)
    answers.get('2')?.()
    answers.get('3')?.()
    await until('both answers are read', () => answered === 3)
    open()
    await until('every attempt is reported', () => attempts.length === 3)
    assert.deepEqual(wrapped.batches.map((batch) => [...batch].sort()), [[1n], [2n, 3n]])
    assert.deepEqual(attempts.map(({ deliveryId, recorded }) => [deliveryId, recorded]).sort(),
      [[1n, true], [2n, true], [3n, false]])
    assert.deepEqual((await deliveries(subscription.id)).map(({ id, status, attempts }) => [id, status, attempts]),
      [[3n, 'pending', 0], [2n, 'succeeded', 1], [1n, 'succeeded', 1]])
  })

  test('a slot is free once its request has ended: the next attempt starts while the completion is ' +
    'written', async (t) => {
    const { store, subscribe, publish, receiver, deliveries, attempts, newDispatcher } = await setup(t)
    const wrapped = batching(store)
    const subscription = await subscribe()
    let open = (): void => {}
    wrapped.hold(new Promise((resolve) => { open = resolve }))
    const dispatcher = newDispatcher({ store: wrapped.store, concurrency: 1, perSubscription: 1 })
    await dispatcher.start()
    await publish()
    await publish()
    await receiver.waitFor(2)
    assert.deepEqual(attempts, [], 'the first completion is still held')
    open()
    await until('both recorded', () => attempts.length === 2 && dispatcher.inFlight === 0)
    assert.deepEqual((await deliveries(subscription.id)).map(({ status }) => status), ['succeeded', 'succeeded'])
  })

  test('each fast 2xx earns its subscription one more attempt in flight, up to concurrency; a failure ' +
    'takes it back to perSubscription', async (t) => {
    const { subscribe, publish, receiver, attempts, newDispatcher } = await setup(t)
    const held: Array<(status: number) => void> = []
    let answerAtOnce = 3
    receiver.respond((_request, res) => {
      if (answerAtOnce-- > 0) res.writeHead(204).end()
      else held.push((status) => { res.writeHead(status).end() })
    })
    await subscribe()
    const dispatcher = newDispatcher({ concurrency: 4, perSubscription: 1, fastAttemptMs: 60_000, schedule: [60_000] })
    await dispatcher.start()
    for (let i = 0; i < 3; i++) await publish()
    await until('three recorded', () => attempts.length === 3)
    for (let i = 0; i < 5; i++) await publish()
    await receiver.waitFor(7)
    assert.equal(held.length, 4, 'four in flight at once: one, and one more for each fast 2xx, up to concurrency')
    for (const answer of held.splice(0)) answer(503)
    await receiver.waitFor(8)
    await until('the failures recorded', () => attempts.length === 7 && dispatcher.inFlight === 1)
    assert.equal(held.length, 1)
    held.shift()?.(204)
    await until('the last recorded', () => attempts.length === 8)
  })

  test('stop lets attempts in flight finish within the grace period, and claims nothing more', async (t) => {
    const { dispatcher, subscribe, publish, receiver, deliveries } = await setup(t, { concurrency: 1 })
    const subscription = await subscribe()
    receiver.respond(async (_request, res) => {
      await new Promise((resolve) => setTimeout(resolve, 100))
      res.writeHead(200).end()
    })
    await dispatcher.start()
    await publish()
    await publish()
    await receiver.waitFor(1)
    await dispatcher.stop(2000)
    const [second, first] = await deliveries(subscription.id)
    assert.equal(first?.status, 'succeeded', 'the attempt in flight finished and was recorded')
    assert.equal(second?.status, 'pending', 'nothing new was claimed')
    assert.equal(receiver.requests.length, 1)
    assert.equal(dispatcher.inFlight, 0)
    dispatcher.wake()
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.equal(receiver.requests.length, 1, 'a stopped dispatcher ignores wakes')
  })

  test('past the grace period an attempt is abandoned and its delivery released, untouched, for another ' +
    'instance', async (t) => {
    const { dispatcher, subscribe, publish, receiver, deliveries, newDispatcher } = await setup(t)
    const subscription = await subscribe()
    let answer = false
    receiver.respond((_request, res) => { if (answer) res.writeHead(200).end() })
    await dispatcher.start()
    await publish()
    await receiver.waitFor(1)
    const started = Date.now()
    await dispatcher.stop(50)
    assert.ok(Date.now() - started < 1000)
    const [released] = await deliveries(subscription.id)
    assert.deepEqual([released?.status, released?.attempts, released?.lastAttemptAt], ['pending', 0, undefined])
    answer = true
    const next = newDispatcher()
    await next.start()
    await until('delivered by the next instance',
      async () => (await deliveries(subscription.id))[0]?.status === 'succeeded')
    assert.equal(receiver.requests.length, 2)
    assert.equal(receiver.requests[0]?.headers['webhook-id'], receiver.requests[1]?.headers['webhook-id'])
  })

  test("a dead instance's claim is attempted again once its lease has run out", async (t) => {
    const { dispatcher, subscribe, publish, store, receiver, deliveries } = await setup(t)
    const subscription = await subscribe()
    await publish()
    const [claimed] = await store.claimDue({
      lease: 'dead:1',
      now: Date.now(),
      leaseMs: 200,
      limit: 10,
      perSubscription: 10,
      skipSubscriptions: []
    })
    assert.ok(claimed !== undefined)
    await dispatcher.start()
    await new Promise((resolve) => setTimeout(resolve, 80))
    assert.equal(receiver.requests.length, 0, 'not while the lease holds')
    await receiver.waitFor(1)
    await until('succeeded', async () => (await deliveries(subscription.id))[0]?.status === 'succeeded')
    assert.deepEqual(await store.completeDelivery({
      id: claimed.id,
      lease: 'dead:1',
      attemptedAt: Date.now(),
      status: 'failed',
      disableSubscription: true,
      failingDisableBefore: 0
    }), { recorded: false, subscriptionDisabled: false }, 'the dead claim can no longer write')
  })

  test('after a rotation deliveries carry both signatures; either secret verifies', async (t) => {
    const { dispatcher, subscribe, publish, receiver, service } = await setup(t)
    const { id, secret: old } = await subscribe()
    const rotated = await service.rotateSecret(OWNER, id)
    assert.notEqual(rotated.secret, old)
    await dispatcher.start()
    await publish()
    const [request] = await receiver.waitFor(1)
    assert.ok(request !== undefined)
    assert.match(String(request.headers['webhook-signature']), /^v1,\S+ v1,\S+$/)
    verifyWebhook(rotated.secret, request)
    verifyWebhook(old, request)
    assert.throws(() => new Webhook('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=').verify(request.body, {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature'])
    }))
  })

  test('a retry request makes a failed delivery go out again at once', async (t) => {
    const { dispatcher, subscribe, publish, receiver, service, deliveries } = await setup(t,
      { schedule: [], pollIntervalMs: 60_000 })
    const subscription = await subscribe()
    receiver.respond((_request, res) => { res.writeHead(500).end() })
    await dispatcher.start()
    await publish()
    await until('failed', async () => (await deliveries(subscription.id))[0]?.status === 'failed')
    receiver.respond((_request, res) => { res.writeHead(200).end() })
    const [failed] = await deliveries(subscription.id)
    const retried = await service.retryDelivery(OWNER, subscription.id, failed?.id ?? 0n)
    assert.equal(retried.status, 'pending')
    await until('succeeded', async () => (await deliveries(subscription.id))[0]?.status === 'succeeded')
    assert.equal((await deliveries(subscription.id))[0]?.attempts, 2)
  })

  test('a URL that turns out non-public at delivery is refused there, without a connection', async (t) => {
    const { store, subscribe, publish, receiver, deliveries, newDispatcher } = await setup(t)
    const subscription = await subscribe() // allowed at creation: this fixture allows loopback
    const strict = newDispatcher({ policy: { allowPrivate: false, resolve: loopback.resolve }, schedule: [] })
    await strict.start()
    await publish()
    await until('failed', async () => (await deliveries(subscription.id))[0]?.status === 'failed')
    const [delivery] = await deliveries(subscription.id)
    assert.match(delivery?.lastError ?? '',
      /^url-not-allowed: The webhook host 127\.0\.0\.1 is a non-public \(loopback\) address/)
    assert.equal(delivery?.lastStatusCode, undefined)
    assert.equal(receiver.requests.length, 0)
    assert.ok(store !== undefined)
  })

  test('a secret that cannot sign fails the attempt (retried, then failed) without a request', async (t) => {
    const { store, dispatcher, publish, receiver, deliveries, attempts } = await setup(t, { schedule: [10] })
    const broken = await store.createSubscription({
      owner: OWNER, url: `${receiver.origin}/x`, events: [PLANT_CREATED], disabled: false, secret: 'whsec_'
    }, Date.now())
    await dispatcher.start()
    await publish()
    await until('failed', async () => (await deliveries(broken.id))[0]?.status === 'failed')
    assert.match(attempts[0]?.error ?? '', /^internal: the request could not be signed: /)
    assert.equal(receiver.requests.length, 0)
  })

  test('finished deliveries older than the retention are pruned', async (t) => {
    const { subscribe, publish, receiver, deliveries, newDispatcher } = await setup(t)
    const subscription = await subscribe()
    const first = newDispatcher()
    await first.start()
    await publish()
    await receiver.waitFor(1)
    await until('succeeded', async () => (await deliveries(subscription.id))[0]?.status === 'succeeded')
    await first.stop()
    await new Promise((resolve) => setTimeout(resolve, 20))
    const pruner = newDispatcher({ retentionMs: 10 })
    const pruned = new Promise((resolve) => pruner.once('pruned', resolve))
    await pruner.start()
    assert.deepEqual(await pruned, { deleted: 1 })
    assert.deepEqual(await deliveries(subscription.id), [])
  })

  test('store failures are reported, not thrown; the dispatcher carries on', async (t) => {
    const { store, subscribe, publish, receiver, newDispatcher } = await setup(t)
    await subscribe()
    let failClaims = 2
    const flaky: WebhookStore = {
      ...store,
      claimDue: async (request) => {
        if (failClaims-- > 0) throw new Error('database is locked')
        return await store.claimDue(request)
      }
    }
    const errors: string[] = []
    const dispatcher = newDispatcher({ store: flaky })
    dispatcher.on('store-error', ({ operation, error }) => errors.push(`${operation}: ${(error as Error).message}`))
    await dispatcher.start()
    await publish()
    dispatcher.wake()
    await receiver.waitFor(1)
    assert.deepEqual(errors.slice(0, 2), ['claim: database is locked', 'claim: database is locked'])
  })

  test('a listener that throws is reported as a warning; deliveries go on', async (t) => {
    const { dispatcher, subscribe, publish, receiver } = await setup(t)
    await subscribe()
    const warnings: string[] = []
    const onWarning = (warning: Error): void => { warnings.push(warning.message) }
    process.on('warning', onWarning)
    t.after(() => { process.off('warning', onWarning) })
    dispatcher.on('attempt', () => { throw new Error('metrics are broken') })
    await dispatcher.start()
    await publish()
    await publish()
    await receiver.waitFor(2)
    await until('warned', () => warnings.length > 0)
    assert.match(warnings[0] ?? '', /'attempt' listener threw: metrics are broken/)
  })

  test('options are checked', () => {
    const store = {} as WebhookStore
    assert.throws(() => new WebhookDispatcher({ store, policy: loopback, concurrency: 0 }),
      /concurrency must be a positive number/)
    assert.throws(() => new WebhookDispatcher({ store, policy: loopback, timeoutMs: 1000, leaseMs: 1000 }),
      /leaseMs must exceed timeoutMs/)
  })
})

test('a stop while start is still setting up its listener ends the listener too: nothing of the dispatcher ' +
  'outlives it', async (t) => {
  const { store } = await setup(t)
  let listening = 0
  let release: () => void = () => {}
  const slowListen: WebhookStore['listen'] = async () => {
    // The listener's connection takes a while to come up.
    await new Promise<void>((resolve) => { release = resolve })
    listening++
    return async () => { listening-- }
  }
  const dispatcher = new WebhookDispatcher({
    store: { ...store, listen: slowListen },
    policy: loopback,
    pollIntervalMs: 20
  })
  const started = dispatcher.start()
  const stopped = dispatcher.stop(0)
  release()
  await Promise.all([started, stopped])
  assert.equal(listening, 0, 'the listener that came up after the stop was ended')
})
