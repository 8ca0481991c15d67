import { randomBytes } from 'node:crypto'
import { EventEmitter, setMaxListeners } from 'node:events'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { attemptDelivery, createConnectionPool, type AttemptRequest, type AttemptResult, type RequestFunction } from './deliver.js'
import { webhookBusy } from '../errors.js'
import { newMessageId, testEventPayload, type WebhookEventType } from './events.js'
import { DEFAULT_JITTER, DEFAULT_RETRY_SCHEDULE_MS, verdict, type AttemptVerdict } from './schedule.js'
import { signatureHeader } from './signing.js'
import type {
  ClaimedDelivery, CompletionResult, DeliveryCompletion, DeliveryStatus, SigningTarget, WebhookStore
} from './store.js'
import type { AddressPolicy } from './url-policy.js'
import { USER_AGENT } from './user-agent.js'

export const DEFAULT_TIMEOUT_MS = 10_000
export const DEFAULT_CONCURRENCY = 10
export const DEFAULT_PER_SUBSCRIPTION = 2
export const DEFAULT_POLL_INTERVAL_MS = 1000
export const DEFAULT_DISABLE_AFTER_MS = 5 * 24 * 3_600_000
export const DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000
export const DEFAULT_PRUNE_INTERVAL_MS = 3_600_000
export const DEFAULT_STOP_GRACE_MS = 10_000
/** A lease's length where the store renews leases (PostgreSQL): how long a dead instance's claims outlive it. */
export const HEARTBEAT_LEASE_MS = 10_000
/** How often a live instance renews the leases of its attempts in flight: well within HEARTBEAT_LEASE_MS. */
export const HEARTBEAT_INTERVAL_MS = 3_000
// Busy-API pacing of attempts: see docs/performance.md#what-the-measurements-decided.
export const DEFAULT_BUSY_INTERVAL_MS = 100
/** An answer this fast earns its subscription one more attempt in flight: see #allowance. */
export const DEFAULT_FAST_ATTEMPT_MS = 100
/** A test event waits this long at most for a free slot and its turn in the pace; longer is a 503 with Retry-After. */
const TEST_WAIT_MS = 1000
/** How often a waiting test event looks for a free slot. */
const TEST_SLOT_POLL_MS = 20
/** Completions written in one round trip at most: bounds a statement's size. */
const COMPLETION_BATCH = 100

export interface DispatcherOptions {
  store: WebhookStore
  policy: AddressPolicy
  concurrency?: number
  perSubscription?: number
  timeoutMs?: number
  schedule?: readonly number[]
  jitter?: number
  /** Above timeoutMs, so an instance that dies mid-attempt holds a delivery no longer than this. */
  leaseMs?: number
  pollIntervalMs?: number
  disableAfterMs?: number
  retentionMs?: number
  pruneIntervalMs?: number
  userAgent?: string
  instanceId?: string
  now?: () => number
  random?: () => number
  maxResponseBytes?: number
  /** Replaces http(s).request (tests). */
  request?: RequestFunction
  /** Opens a span per attempt; its headers (`traceparent`) are sent, `end` gets the outcome. */
  traceAttempt?: (delivery: ClaimedDelivery) => AttemptTrace
  /** True while the API needs the CPU (src/webhooks/api-load.ts): deliveries then yield to requests. */
  apiBusy?: () => boolean
  busyIntervalMs?: number
  /** A 2xx answered within this many ms earns its subscription one more attempt in flight (up to concurrency). */
  fastAttemptMs?: number
}

/** Where a test event goes, whose it is, and the secrets it is signed with (every one a delivery would carry). */
export interface TestTarget extends SigningTarget {
  id: bigint
  owner: string
}

/** What an attempt sends, signed now: a delivery's, or a test event's. */
type SignedMessage = Pick<ClaimedDelivery, 'url' | 'payload' | 'messageId' | 'secrets'>

export interface TestAttempt {
  webhookId: string
  succeeded: boolean
  at: number
  durationMs: number
  statusCode?: number
  error?: string
  responseBody?: string
}

/** An attempt as tracing sees it. */
export interface AttemptTrace {
  headers: Record<string, string>
  end: (attempt: AttemptEvent) => void
}

export interface AttemptEvent {
  deliveryId: bigint
  subscriptionId: bigint
  messageId: string
  eventType: WebhookEventType
  attempt: number
  requestId?: string
  status: DeliveryStatus
  statusCode?: number
  error?: string
  nextAttemptAt?: number
  durationMs: number
  /** False when the lease had run out and another instance had taken the delivery over. */
  recorded: boolean
}

export interface DispatcherEvents {
  attempt: [AttemptEvent]
  'subscription-disabled': [{ subscriptionId: bigint, reason: 'gone' | 'failing' }]
  pruned: [{ deleted: number }]
  /** The dispatcher carries on: unrecorded attempts come due again when their lease runs out. */
  'store-error': [{ operation: 'claim' | 'complete' | 'release' | 'renew' | 'prune', error: unknown }]
}

type State = 'idle' | 'running' | 'stopping' | 'stopped'

const positive = (value: number, name: string): number => {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`)
  return value
}

/**
 * Delivers what the outbox holds, off the request path: due deliveries are claimed under a lease
 * and attempted concurrently, capped per subscription so a slow receiver cannot starve the others.
 * Woken by wake() (after a commit), store notifications (PostgreSQL LISTEN), a poll, and freed slots.
 */
export class WebhookDispatcher extends EventEmitter<DispatcherEvents> {
  readonly #store: WebhookStore
  readonly #policy: AddressPolicy
  readonly #concurrency: number
  readonly #perSubscription: number
  readonly #timeoutMs: number
  readonly #schedule: readonly number[]
  readonly #jitter: number
  readonly #leaseMs: number
  /** Whether the store renews leases (see HEARTBEAT_LEASE_MS). */
  readonly #heartbeat: boolean
  #heartbeatTimer: NodeJS.Timeout | undefined
  /** The lease each attempt in flight holds, by delivery id (the heartbeat renews them). */
  readonly #leases = new Map<bigint, string>()
  readonly #pollIntervalMs: number
  readonly #disableAfterMs: number
  readonly #retentionMs: number
  readonly #pruneIntervalMs: number
  readonly #userAgent: string
  readonly #instanceId: string
  readonly #now: () => number
  readonly #random: () => number
  readonly #maxResponseBytes: number | undefined
  readonly #request: RequestFunction | undefined
  readonly #traceAttempt: ((delivery: ClaimedDelivery) => AttemptTrace) | undefined
  readonly #apiBusy: (() => boolean) | undefined
  readonly #busyIntervalMs: number
  #lastStart = -Infinity
  #paceTimer: NodeJS.Timeout | undefined

  #state: State = 'idle'
  readonly #completions: Array<{ completion: DeliveryCompletion, resolve: (result: CompletionResult) => void, reject: (error: unknown) => void }> = []
  #flushing = false
  #wakeSoonPending = false
  #claims = 0
  /** Attempts whose request has not ended yet (the rest of #inFlight are writing their completion). */
  #sending = 0
  #claiming: Promise<void> | undefined
  #claimAgain = false
  readonly #inFlight = new Set<Promise<void>>()
  readonly #perSubscriptionInFlight = new Map<bigint, number>()
  /**
   * Attempts a subscription may have in flight when more than perSubscription: each fast 2xx adds
   * one, up to concurrency; any other outcome takes it back to perSubscription. Slots held only
   * briefly starve no one, and a receiver that slows down holds them for one timeout at most.
   */
  readonly #allowance = new Map<bigint, number>()
  readonly #fastAttemptMs: number
  readonly #perOwnerInFlight = new Map<string, number>()
  /** While several owners have subscriptions, one holds at most half the slots: attempts cannot be preempted. */
  readonly #perOwnerShare: number
  #owners = 1
  /** Aborted when a stop's grace period is over: attempts still running give their deliveries back. */
  readonly #abandon = new AbortController()
  readonly #connections = createConnectionPool()
  #pollTimer: NodeJS.Timeout | undefined
  #pruneTimer: NodeJS.Timeout | undefined
  #pruning: Promise<void> | undefined
  #unlisten: (() => Promise<void>) | undefined
  #stopped: Promise<void> | undefined
  #starting: Promise<void> | undefined

  constructor (options: DispatcherOptions) {
    super()
    this.#store = options.store
    this.#policy = options.policy
    this.#concurrency = positive(options.concurrency ?? DEFAULT_CONCURRENCY, 'concurrency')
    this.#perSubscription = positive(options.perSubscription ?? DEFAULT_PER_SUBSCRIPTION, 'perSubscription')
    this.#perOwnerShare = Math.max(1, Math.ceil(this.#concurrency / 2))
    this.#timeoutMs = positive(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, 'timeoutMs')
    this.#schedule = options.schedule ?? DEFAULT_RETRY_SCHEDULE_MS
    this.#jitter = options.jitter ?? DEFAULT_JITTER
    this.#heartbeat = this.#store.renewLeases !== undefined
    // Renewed leases outlast a missed beat or two; unrenewed ones need a wide margin past the attempt.
    this.#leaseMs = positive(options.leaseMs ?? (this.#heartbeat ? HEARTBEAT_LEASE_MS : this.#timeoutMs + 60_000), 'leaseMs')
    if (!this.#heartbeat && this.#leaseMs <= this.#timeoutMs) throw new RangeError('leaseMs must exceed timeoutMs')
    if (this.#heartbeat && this.#leaseMs <= HEARTBEAT_INTERVAL_MS) throw new RangeError('leaseMs must exceed the heartbeat interval')
    this.#pollIntervalMs = positive(options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS, 'pollIntervalMs')
    this.#disableAfterMs = positive(options.disableAfterMs ?? DEFAULT_DISABLE_AFTER_MS, 'disableAfterMs')
    this.#retentionMs = positive(options.retentionMs ?? DEFAULT_RETENTION_MS, 'retentionMs')
    this.#pruneIntervalMs = positive(options.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS, 'pruneIntervalMs')
    this.#userAgent = options.userAgent ?? USER_AGENT
    this.#instanceId = options.instanceId ?? randomBytes(6).toString('hex')
    this.#now = options.now ?? Date.now
    this.#random = options.random ?? Math.random
    this.#maxResponseBytes = options.maxResponseBytes
    this.#request = options.request
    this.#traceAttempt = options.traceAttempt
    this.#apiBusy = options.apiBusy
    this.#busyIntervalMs = positive(options.busyIntervalMs ?? DEFAULT_BUSY_INTERVAL_MS, 'busyIntervalMs')
    this.#fastAttemptMs = positive(options.fastAttemptMs ?? DEFAULT_FAST_ATTEMPT_MS, 'fastAttemptMs')
    // Every attempt in flight listens to it: more than the default 10 is expected, not a leak.
    setMaxListeners(this.#concurrency + 10, this.#abandon.signal)
  }

  get inFlight (): number {
    return this.#inFlight.size
  }

  async start (): Promise<void> {
    if (this.#state !== 'idle') throw new Error('a dispatcher starts once')
    this.#state = 'running'
    this.#pollTimer = setInterval(() => {
      void this.countOwners()
      this.wake()
    }, this.#pollIntervalMs)
    this.#pollTimer.unref()
    this.#pruneTimer = setInterval(() => { this.#prune() }, this.#pruneIntervalMs)
    this.#pruneTimer.unref()
    if (this.#heartbeat) {
      this.#heartbeatTimer = setInterval(() => { this.#renew() }, HEARTBEAT_INTERVAL_MS)
      this.#heartbeatTimer.unref()
    }
    this.#starting = this.#listen()
    await this.#starting
    void this.countOwners()
    this.#prune()
    this.wake()
  }

  async #listen (): Promise<void> {
    if (this.#store.listen === undefined) return
    const unlisten = await this.#store.listen(() => { this.wake() })
    // Stopped while the listener was connecting: it must not outlive the dispatcher.
    if (this.#state !== 'running') await unlisten()
    else this.#unlisten = unlisten
  }

  /** Call it after committing events (and after a retry request). */
  wake (): void {
    if (this.#state !== 'running') return
    if (this.#claiming !== undefined) {
      this.#claimAgain = true
      return
    }
    this.#claiming = this.#claimLoop()
  }

  /**
   * Lets attempts in flight finish for up to `graceMs`, then releases the rest untouched, to be
   * attempted again. Call it before closing the store.
   */
  async stop (graceMs = DEFAULT_STOP_GRACE_MS): Promise<void> {
    this.#stopped ??= this.#stop(graceMs)
    await this.#stopped
  }

  async #stop (graceMs: number): Promise<void> {
    const wasRunning = this.#state === 'running'
    this.#state = 'stopping'
    clearInterval(this.#pollTimer)
    clearInterval(this.#pruneTimer)
    clearInterval(this.#heartbeatTimer)
    clearTimeout(this.#paceTimer)
    if (wasRunning) {
      await this.#starting?.catch(() => {})
      await this.#unlisten?.()
      await this.#claiming
      let graceTimer: NodeJS.Timeout | undefined
      const grace = new Promise<void>((resolve) => { graceTimer = setTimeout(resolve, graceMs) })
      await Promise.race([this.#allSettled(), grace])
      clearTimeout(graceTimer)
      this.#abandon.abort()
      await this.#allSettled()
      await this.#pruning
    }
    this.#connections.close()
    this.#state = 'stopped'
  }

  async #allSettled (): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight])
  }

  async #claimLoop (): Promise<void> {
    try {
      do {
        this.#claimAgain = false
        await this.#claimOnce()
      } while (this.#claimAgain && this.#state === 'running')
    } finally {
      // In the very step that saw no wake: a wake() in a later one starts a new loop, and is never lost.
      this.#claiming = undefined
    }
  }

  // While the API is busy, one attempt at a time, paced: see docs/performance.md#what-the-measurements-decided.
  async #claimOnce (): Promise<void> {
    const busy = this.#apiBusy?.() === true
    const free = this.#free(busy)
    if (free <= 0) return
    if (busy) {
      const wait = this.#paceWait(true)
      if (wait > 0) {
        this.#wakeIn(wait)
        return
      }
    }
    const lease = `${this.#instanceId}:${++this.#claims}`
    const skipSubscriptions = [...this.#perSubscriptionInFlight]
      .filter(([id, count]) => count >= this.#allowed(id))
      .map(([id]) => id)
    let perSubscription = this.#perSubscription
    for (const allowed of this.#allowance.values()) perSubscription = Math.max(perSubscription, allowed)
    const skipOwners = [...this.#perOwnerInFlight].filter(([, count]) => count >= this.#perOwner).map(([owner]) => owner)
    let claimed: ClaimedDelivery[]
    try {
      claimed = await this.#store.claimDue({
        lease, now: this.#now(), leaseMs: this.#leaseMs, limit: free, perSubscription, skipSubscriptions, skipOwners
      })
    } catch (error) {
      this.#emit('store-error', { operation: 'claim', error })
      return
    }
    // Slots may have been taken meanwhile (or a stop begun): what cannot start now goes back.
    const unwanted: bigint[] = []
    for (const delivery of claimed) {
      if (this.#state === 'running' && this.#free(busy) > 0 &&
          (this.#perSubscriptionInFlight.get(delivery.subscriptionId) ?? 0) < this.#allowed(delivery.subscriptionId) &&
          (this.#perOwnerInFlight.get(delivery.owner) ?? 0) < this.#perOwner) {
        this.#begin(delivery, lease)
      } else {
        unwanted.push(delivery.id)
      }
    }
    await this.#release(lease, unwanted)
  }

  /**
   * A slot is free again once its request has ended: the completion is written meanwhile, with others
   * (at most `concurrency` waiting). While the API is busy, one attempt at a time, completion included.
   */
  #free (busy: boolean): number {
    return busy ? 1 - this.#inFlight.size : Math.min(this.#concurrency - this.#sending, 2 * this.#concurrency - this.#inFlight.size)
  }

  #allowed (subscriptionId: bigint): number {
    return this.#allowance.get(subscriptionId) ?? this.#perSubscription
  }

  get #perOwner (): number {
    return this.#owners > 1 ? this.#perOwnerShare : this.#concurrency
  }

  /** Recounts the owners now: a subscription changed, and the next claim must share slots by the new count. */
  async countOwners (): Promise<void> {
    try {
      this.#owners = await this.#store.activeOwners()
    } catch {
      // The last count stands; the next poll counts again.
    }
  }

  /** Wakes the dispatcher once the answers read in this turn are all in: one claim fills their slots. */
  #wakeSoon (): void {
    if (this.#wakeSoonPending) return
    this.#wakeSoonPending = true
    setImmediate(() => {
      this.#wakeSoonPending = false
      this.wake()
    })
  }

  /** Wakes the dispatcher in `ms` (once, however often asked meanwhile). */
  #wakeIn (ms: number): void {
    if (this.#paceTimer !== undefined) return
    this.#paceTimer = setTimeout(() => {
      this.#paceTimer = undefined
      this.wake()
    }, Math.ceil(ms))
    this.#paceTimer.unref()
  }

  #begin (delivery: ClaimedDelivery, lease: string): void {
    this.#leases.set(delivery.id, lease)
    void this.#hold(delivery.subscriptionId, delivery.owner, async (sent) => {
      try {
        await this.#attempt(delivery, lease, sent)
      } finally {
        this.#leases.delete(delivery.id)
      }
    })
  }

  /**
   * Runs `attempt` in a slot of the subscription and its owner: `sent` (called at the latest when
   * it ends) frees the slot; until it ends it counts as in flight.
   */
  #hold<T> (subscriptionId: bigint, owner: string, attempt: (sent: () => void) => Promise<T>): Promise<T> {
    this.#lastStart = performance.now()
    count(this.#perSubscriptionInFlight, subscriptionId, 1)
    count(this.#perOwnerInFlight, owner, 1)
    this.#sending++
    let sending = true
    const sent = (): void => {
      if (!sending) return
      sending = false
      this.#sending--
      count(this.#perSubscriptionInFlight, subscriptionId, -1)
      count(this.#perOwnerInFlight, owner, -1)
      this.#wakeSoon()
    }
    const running = attempt(sent).finally(() => {
      sent()
      this.#inFlight.delete(settled)
      this.wake()
    })
    const settled = running.then(() => {}, () => {})
    this.#inFlight.add(settled)
    return running
  }

  /** `sent`: called when the request is over, so the next one can start while this one's completion is written. */
  async #attempt (delivery: ClaimedDelivery, lease: string, sent: () => void): Promise<void> {
    const attemptedAt = this.#now()
    const started = performance.now()
    const trace = this.#traceAttempt?.(delivery)
    const result = await this.#send(delivery, attemptedAt, trace?.headers)
    const durationMs = performance.now() - started
    if (result.kind === 'error' && result.reason === 'aborted') {
      await this.#release(lease, [delivery.id])
      trace?.end({
        deliveryId: delivery.id,
        subscriptionId: delivery.subscriptionId,
        messageId: delivery.messageId,
        eventType: delivery.eventType,
        attempt: delivery.attempts + 1,
        status: 'pending',
        error: describeFailure(result) ?? 'aborted',
        durationMs,
        recorded: false
      })
      return
    }
    const attempts = delivery.attempts + 1
    const statusCode = result.kind === 'response' ? result.statusCode : undefined
    if (statusCode !== undefined && statusCode >= 200 && statusCode < 300 && durationMs <= this.#fastAttemptMs) {
      this.#allowance.set(delivery.subscriptionId, Math.min(this.#allowed(delivery.subscriptionId) + 1, Math.max(this.#concurrency, this.#perSubscription)))
    } else {
      this.#allowance.delete(delivery.subscriptionId)
    }
    sent()
    // The retry wait runs from the attempt's end, or one that timed out would be retried at once.
    const outcome = verdict({ ...(statusCode !== undefined && { statusCode }), attempts, attemptedAt: this.#now() }, this.#schedule, this.#jitter, this.#random)
    const completion = this.#completion(delivery, lease, attemptedAt, result, outcome, durationMs)
    let recorded = false
    try {
      const done = await this.#complete(completion)
      recorded = done.recorded
      if (done.subscriptionDisabled) {
        this.#emit('subscription-disabled', { subscriptionId: delivery.subscriptionId, reason: outcome.status === 'gone' ? 'gone' : 'failing' })
      }
    } catch (error) {
      // The lease runs out and the delivery is attempted again: at least once, never lost.
      this.#emit('store-error', { operation: 'complete', error })
    }
    const event: AttemptEvent = {
      deliveryId: delivery.id,
      subscriptionId: delivery.subscriptionId,
      messageId: delivery.messageId,
      eventType: delivery.eventType,
      attempt: attempts,
      ...(delivery.origin.requestId !== undefined && { requestId: delivery.origin.requestId }),
      status: completion.status,
      ...(statusCode !== undefined && { statusCode }),
      ...(completion.error !== undefined && { error: completion.error }),
      ...(completion.nextAttemptAt !== undefined && { nextAttemptAt: completion.nextAttemptAt }),
      durationMs,
      recorded
    }
    trace?.end(event)
    this.#emit('attempt', event)
  }

  /**
   * Where the store takes several at once, completions that come in while one batch is written go
   * together in the next: one round trip for many attempts, without waiting for a timer.
   */
  async #complete (completion: DeliveryCompletion): Promise<CompletionResult> {
    if (this.#store.completeDeliveries === undefined) return await this.#completeAlone(completion)
    return await new Promise((resolve, reject) => {
      this.#completions.push({ completion, resolve, reject })
      if (this.#completions.length === 1 && !this.#flushing) setImmediate(() => { void this.#flush() })
    })
  }

  async #flush (): Promise<void> {
    this.#flushing = true
    while (this.#completions.length > 0) {
      const batch = this.#completions.splice(0, COMPLETION_BATCH)
      try {
        const results = await (this.#store.completeDeliveries as NonNullable<WebhookStore['completeDeliveries']>)(batch.map(({ completion }) => completion))
        batch.forEach(({ resolve }, i) => { resolve(results[i] ?? { recorded: false, subscriptionDisabled: false }) })
      } catch (error) {
        this.#emit('store-error', { operation: 'complete', error })
        // One row the store cannot write must not fail the rest: each is written on its own.
        await Promise.all(batch.map(async ({ completion, resolve, reject }) => {
          await this.#completeAlone(completion).then(resolve, reject)
        }))
      }
    }
    this.#flushing = false
  }

  /**
   * A completion the store refuses is written again without the receiver's answer: its attempt
   * still counts, so the delivery keeps to its retry schedule.
   */
  async #completeAlone (completion: DeliveryCompletion): Promise<CompletionResult> {
    try {
      return await this.#store.completeDelivery(completion)
    } catch (error) {
      const { responseBody, ...withoutAnswer } = completion
      if (responseBody === undefined) throw error
      this.#emit('store-error', { operation: 'complete', error })
      return await this.#store.completeDelivery(withoutAnswer)
    }
  }

  /**
   * A signed `webhook.test` now, outside the outbox (nothing stored or retried), in a delivery's slot
   * and pace; resolves with the outcome. With no slot free now it is refused (`webhook-busy`), never queued.
   */
  async sendTest (target: TestTarget): Promise<TestAttempt> {
    const deadline = performance.now() + TEST_WAIT_MS
    for (;;) {
      const busy = this.#apiBusy?.() === true
      const pace = this.#paceWait(busy)
      const free = this.#free(busy) > 0 &&
        (this.#perSubscriptionInFlight.get(target.id) ?? 0) < this.#allowed(target.id) &&
        (this.#perOwnerInFlight.get(target.owner) ?? 0) < this.#perOwner
      if (pace <= 0 && free) break
      // A slot frees within an attempt's time: looked at again shortly. The pace says when.
      const wait = pace > 0 ? pace : TEST_SLOT_POLL_MS
      if (performance.now() + wait > deadline) throw webhookBusy(Math.max(1, Math.ceil(pace / 1000)))
      await sleep(wait)
    }
    return await this.#hold(target.id, target.owner, async () => await this.#sendTest(target))
  }

  /** How long until the next attempt may start while the API is busy (always, in a sandbox); 0: now. */
  #paceWait (busy: boolean): number {
    return busy ? this.#lastStart + this.#busyIntervalMs - performance.now() : 0
  }

  async #sendTest (target: TestTarget): Promise<TestAttempt> {
    const attemptedAt = this.#now()
    const messageId = newMessageId()
    const started = performance.now()
    const payload = testEventPayload(target.id, attemptedAt)
    const result = await this.#send(
      { messageId, payload, url: target.url, secrets: target.secrets }, attemptedAt, undefined)
    const error = describeFailure(result)
    return {
      webhookId: messageId,
      succeeded: error === undefined,
      at: attemptedAt,
      durationMs: Math.round(performance.now() - started),
      ...(result.kind === 'response' && { statusCode: result.statusCode, responseBody: result.body }),
      ...(error !== undefined && { error })
    }
  }

  async #send (
    delivery: SignedMessage, attemptedAt: number, extraHeaders: Record<string, string> | undefined
  ): Promise<AttemptResult> {
    let request: AttemptRequest
    try {
      request = this.#signedRequest(delivery, attemptedAt)
      if (extraHeaders !== undefined) request.headers = { ...extraHeaders, ...request.headers }
    } catch (err) {
      // A secret that cannot sign is a failed attempt, never an exception leaving the delivery leased.
      return { kind: 'error', reason: 'internal', message: `the request could not be signed: ${err instanceof Error ? err.message : String(err)}` }
    }
    return await attemptDelivery(request, {
      policy: this.#policy,
      timeoutMs: this.#timeoutMs,
      signal: this.#abandon.signal,
      pool: this.#connections,
      ...(this.#maxResponseBytes !== undefined && { maxResponseBytes: this.#maxResponseBytes }),
      ...(this.#request !== undefined && { request: this.#request })
    })
  }

  /** The Standard Webhooks request: the stored body, signed now with every active secret. */
  #signedRequest (delivery: SignedMessage, attemptedAt: number): AttemptRequest {
    const timestamp = Math.floor(attemptedAt / 1000)
    return {
      url: delivery.url,
      body: delivery.payload,
      headers: {
        'content-type': 'application/json',
        'user-agent': this.#userAgent,
        'webhook-id': delivery.messageId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(delivery.secrets, delivery.messageId, timestamp, delivery.payload)
      }
    }
  }

  #completion (delivery: ClaimedDelivery, lease: string, attemptedAt: number, result: AttemptResult, outcome: AttemptVerdict, durationMs: number): DeliveryCompletion {
    const status: DeliveryStatus = outcome.status === 'succeeded' ? 'succeeded' : outcome.status === 'retry' ? 'pending' : 'failed'
    const error = describeFailure(result)
    return {
      id: delivery.id,
      lease,
      attemptedAt,
      durationMs,
      ...(result.kind === 'response' && { statusCode: result.statusCode, responseBody: result.body }),
      ...(error !== undefined && { error }),
      status,
      ...(outcome.status === 'retry' && { nextAttemptAt: outcome.nextAttemptAt }),
      disableSubscription: outcome.status === 'gone',
      failingDisableBefore: attemptedAt - this.#disableAfterMs
    }
  }

  async #release (lease: string, ids: readonly bigint[]): Promise<void> {
    if (ids.length === 0) return
    try {
      await this.#store.releaseDeliveries(lease, ids)
    } catch (error) {
      // Not given back: they come due again when the lease runs out.
      this.#emit('store-error', { operation: 'release', error })
    }
  }

  /** Extends the leases of the attempts in flight; a failure is reported, and the next beat tries again. */
  #renew (): void {
    if (this.#leases.size === 0) return
    const leases = [...this.#leases].map(([id, lease]) => ({ id, lease }))
    this.#store.renewLeases?.(leases, this.#now() + this.#leaseMs).catch((error: unknown) => {
      this.#emit('store-error', { operation: 'renew', error })
    })
  }

  #prune (): void {
    if (this.#state !== 'running' || this.#pruning !== undefined) return
    this.#pruning = this.#store.pruneDeliveries(this.#now() - this.#retentionMs).then(
      (deleted) => { if (deleted > 0) this.#emit('pruned', { deleted }) },
      (error: unknown) => { this.#emit('store-error', { operation: 'prune', error }) }
    ).finally(() => { this.#pruning = undefined })
  }

  /** Listeners are logging and metrics: one that throws is reported, and the dispatcher carries on. */
  #emit<K extends keyof DispatcherEvents> (event: K, ...args: DispatcherEvents[K]): void {
    try {
      (this.emit as (event: K, ...args: DispatcherEvents[K]) => boolean)(event, ...args)
    } catch (err) {
      process.emitWarning(`a webhook dispatcher '${event}' listener threw: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
}

function count<K> (counts: Map<K, number>, key: K, by: number): void {
  const next = (counts.get(key) ?? 0) + by
  if (next > 0) counts.set(key, next)
  else counts.delete(key)
}

/** Why an attempt did not succeed, in words; undefined for a 2xx. */
export function describeFailure (result: AttemptResult): string | undefined {
  if (result.kind === 'error') return `${result.reason}: ${result.message}`
  const status = result.statusCode
  if (status >= 200 && status < 300) return undefined
  if (status === 410) return 'the receiver answered 410 Gone: the subscription is disabled'
  if (status >= 300 && status < 400) return `the receiver answered ${status}, a redirect: redirects are not followed`
  return `the receiver answered ${status}`
}
