import { randomBytes } from 'node:crypto'
import { EventEmitter, setMaxListeners } from 'node:events'
import { performance } from 'node:perf_hooks'
import { attemptDelivery, createConnectionPool, type AttemptRequest, type AttemptResult, type RequestFunction } from './deliver.js'
import { newMessageId, testEventPayload, type WebhookEventType } from './events.js'
import { DEFAULT_JITTER, DEFAULT_RETRY_SCHEDULE_MS, verdict, type AttemptVerdict } from './schedule.js'
import { signatureHeader } from './signing.js'
import type { ClaimedDelivery, DeliveryCompletion, DeliveryStatus, WebhookStore } from './store.js'
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
/**
 * While the API is busy, attempts start at least this far apart: at most 10 a second
 * (WEBHOOK_BUSY_INTERVAL_MS). An attempt (claim, fan-out, signed request, completion) costs the
 * loop 0.3 to 1 ms on a slow host, and on a 2-core machine the receiver and the sockets it wakes
 * slow the whole service beyond that: 50 a second (20 ms) took create with a subscription to
 * 0.60–0.80 of create without, 10 a second to 0.89–0.92, 1 a second to 0.82–0.95 (README,
 * "Performance", 2026-11-25). The backlog waits, durable, for the load to drop.
 */
export const DEFAULT_BUSY_INTERVAL_MS = 100

export interface DispatcherOptions {
  store: WebhookStore
  policy: AddressPolicy
  /** Attempts in flight at once in this process (WEBHOOK_CONCURRENCY). */
  concurrency?: number
  /** Attempts in flight at once per subscription in this process: a slow receiver holds at most this many slots. */
  perSubscription?: number
  /** One attempt, from resolving the host to the answer's status (WEBHOOK_TIMEOUT_MS). */
  timeoutMs?: number
  /** Waits before each retry (WEBHOOK_RETRY_SCHEDULE_MS); its length is the number of retries. */
  schedule?: readonly number[]
  /** Each wait is scaled by a random factor in [1 - jitter, 1 + jitter). */
  jitter?: number
  /** How long a claim holds a delivery; an instance that dies mid-attempt holds it no longer. Above timeoutMs. */
  leaseMs?: number
  /** How often due deliveries are looked for without a wake (retries, other instances' events). */
  pollIntervalMs?: number
  /** A subscription whose attempts have all failed for this long is disabled (WEBHOOK_DISABLE_AFTER_MS). */
  disableAfterMs?: number
  /** Finished deliveries older than this are deleted (WEBHOOK_RETENTION_MS). */
  retentionMs?: number
  pruneIntervalMs?: number
  userAgent?: string
  /** Names this process in leases (random by default). */
  instanceId?: string
  now?: () => number
  random?: () => number
  maxResponseBytes?: number
  /** Replaces http(s).request (tests). */
  request?: RequestFunction
  /**
   * Told as each attempt starts (tracing opens a span there, a child of the originating request's);
   * the headers it returns (`traceparent`) are sent with the attempt, and `end` is called with its outcome.
   */
  traceAttempt?: (delivery: ClaimedDelivery) => AttemptTrace
  /**
   * True while the API needs the CPU (src/webhooks/api-load.ts): deliveries then yield to requests,
   * one attempt in flight at a time and at most one started every `busyIntervalMs`, so they keep
   * moving but never take the service's throughput.
   */
  apiBusy?: () => boolean
  /** While apiBusy, attempts start at least this many milliseconds apart (DEFAULT_BUSY_INTERVAL_MS). */
  busyIntervalMs?: number
}

/** What a test event's one attempt came to. */
export interface TestAttempt {
  webhookId: string
  /** The receiver answered 2xx. */
  succeeded: boolean
  /** When it was sent (epoch ms). */
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

/** One finished attempt, for logs and metrics. */
export interface AttemptEvent {
  deliveryId: bigint
  subscriptionId: bigint
  messageId: string
  eventType: WebhookEventType
  /** 1 for the first attempt. */
  attempt: number
  /** The id of the request whose write caused the event, when known. */
  requestId?: string
  /** What became of the delivery. */
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
  /** A subscription disabled by its receiver (410 Gone) or by failing for disableAfterMs. */
  'subscription-disabled': [{ subscriptionId: bigint, reason: 'gone' | 'failing' }]
  pruned: [{ deleted: number }]
  /** The database failed; the dispatcher carries on (unrecorded attempts come due again when their lease runs out). */
  'store-error': [{ operation: 'claim' | 'complete' | 'release' | 'renew' | 'prune', error: unknown }]
}

type State = 'idle' | 'running' | 'stopping' | 'stopped'

const positive = (value: number, name: string): number => {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`)
  return value
}

/**
 * Delivers what the outbox holds, off the request path. Due deliveries are claimed in batches of
 * at most the free slots, each under a lease of its own claim, and attempted concurrently (at most
 * `concurrency`, at most `perSubscription` for one subscription, so a slow receiver cannot starve
 * the others). After each attempt the outcome is recorded — only while the lease is still held —
 * and the subscription disabled on 410 Gone or after failing for `disableAfterMs`. While the API
 * is busy (`apiBusy`), deliveries yield to it: one attempt at a time, paced (`busyIntervalMs`).
 *
 * Work is looked for on wake() (the SQLite writer calls it after a commit), on the store's
 * notifications (PostgreSQL LISTEN), every `pollIntervalMs`, and whenever a slot frees up.
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
  /** When the last attempt started (performance.now()), for the pace kept while the API is busy. */
  #lastStart = -Infinity
  /** A wake set for when the busy pace allows the next attempt. */
  #paceTimer: NodeJS.Timeout | undefined

  #state: State = 'idle'
  #claims = 0
  /** The claim running now, if any; a wake during it asks for another right after. */
  #claiming: Promise<void> | undefined
  #claimAgain = false
  readonly #inFlight = new Set<Promise<void>>()
  readonly #perSubscriptionInFlight = new Map<bigint, number>()
  readonly #perOwnerInFlight = new Map<string, number>()
  /**
   * The most attempts of one owner in flight at once while several owners have subscriptions: half
   * the slots (at least one), so however many slow receivers or how long a backlog one owner has,
   * another owner's delivery finds a slot (no attempt can be preempted). A sole owner has them all.
   */
  readonly #perOwnerShare: number
  /** Owners with an enabled subscription, as last counted (every poll). */
  #owners = 1
  /** Aborted when a stop's grace period is over: attempts still running give their deliveries back. */
  readonly #abandon = new AbortController()
  /** Kept-alive connections to receivers, closed when the dispatcher stops. */
  readonly #connections = createConnectionPool()
  #pollTimer: NodeJS.Timeout | undefined
  #pruneTimer: NodeJS.Timeout | undefined
  #pruning: Promise<void> | undefined
  #unlisten: (() => Promise<void>) | undefined
  #stopped: Promise<void> | undefined
  /** start()'s listener being set up (a stop waits for it, then ends it). */
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
    // Renewed leases only need to outlast a missed heartbeat or two; without renewal, completing
    // takes a moment after the attempt's own time limit: leave a wide margin.
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
    // Every attempt in flight listens to it: more than the default 10 is expected, not a leak.
    setMaxListeners(this.#concurrency + 10, this.#abandon.signal)
  }

  /** Attempts running now. */
  get inFlight (): number {
    return this.#inFlight.size
  }

  /** Starts polling, listening (when the store can) and pruning; looks for due deliveries at once. */
  async start (): Promise<void> {
    if (this.#state !== 'idle') throw new Error('a dispatcher starts once')
    this.#state = 'running'
    this.#pollTimer = setInterval(() => {
      this.#countOwners()
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
    this.#countOwners()
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

  /** Looks for due deliveries now: call it after committing events (and after a retry request). */
  wake (): void {
    if (this.#state !== 'running') return
    if (this.#claiming !== undefined) {
      this.#claimAgain = true
      return
    }
    this.#claiming = this.#claimLoop().finally(() => { this.#claiming = undefined })
  }

  /**
   * Stops claiming, lets attempts in flight finish for up to `graceMs`, then abandons the rest:
   * their deliveries are released untouched, to be attempted again (by another instance, or
   * after a restart). Resolves once nothing is in flight. Call it before closing the store.
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
      // A claim under way may still hand over deliveries: they are released (see #claimOnce).
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
    do {
      this.#claimAgain = false
      await this.#claimOnce()
    } while (this.#claimAgain && this.#state === 'running')
  }

  /**
   * Attempts allowed in flight now: all of `concurrency`, or, while the API is busy, one, started at
   * least `busyIntervalMs` after the one before. Each attempt costs the process about as much CPU
   * as a write request or more (a claim, a signed HTTP request, a completion); on a saturated event
   * loop, ten at once took a third of the service's throughput, and even one at a time, back to
   * back to a receiver on a fast network, took 0.4 of it (the benchmark's create with a webhook,
   * 2026-11-24). Paced, a busy API keeps its throughput and the backlog still moves (up to 1000 /
   * busyIntervalMs attempts a second); the rest waits in the outbox, durable, until the load drops
   * (the backlog gauges show it).
   */
  async #claimOnce (): Promise<void> {
    const busy = this.#apiBusy?.() === true
    const allowed = busy ? 1 : this.#concurrency
    const free = allowed - this.#inFlight.size
    if (free <= 0) return
    if (busy) {
      const wait = this.#lastStart + this.#busyIntervalMs - performance.now()
      if (wait > 0) {
        this.#wakeIn(wait)
        return
      }
    }
    const lease = `${this.#instanceId}:${++this.#claims}`
    const skipSubscriptions = [...this.#perSubscriptionInFlight]
      .filter(([, count]) => count >= this.#perSubscription)
      .map(([id]) => id)
    const skipOwners = [...this.#perOwnerInFlight].filter(([, count]) => count >= this.#perOwner).map(([owner]) => owner)
    let claimed: ClaimedDelivery[]
    try {
      claimed = await this.#store.claimDue({
        lease, now: this.#now(), leaseMs: this.#leaseMs, limit: free, perSubscription: this.#perSubscription, skipSubscriptions, skipOwners
      })
    } catch (error) {
      this.#emit('store-error', { operation: 'claim', error })
      return
    }
    // Slots may have been taken meanwhile (or a stop begun): what cannot start now goes back.
    const unwanted: bigint[] = []
    for (const delivery of claimed) {
      if (this.#state === 'running' && this.#inFlight.size < allowed &&
          (this.#perSubscriptionInFlight.get(delivery.subscriptionId) ?? 0) < this.#perSubscription &&
          (this.#perOwnerInFlight.get(delivery.owner) ?? 0) < this.#perOwner) {
        this.#begin(delivery, lease)
      } else {
        unwanted.push(delivery.id)
      }
    }
    await this.#release(lease, unwanted)
  }

  get #perOwner (): number {
    return this.#owners > 1 ? this.#perOwnerShare : this.#concurrency
  }

  /** Counts the owners anew; a failure keeps the last count (the claim reports the store's state). */
  #countOwners (): void {
    this.#store.activeOwners().then((owners) => { this.#owners = owners }, () => {})
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
    const { subscriptionId, owner } = delivery
    this.#lastStart = performance.now()
    count(this.#perSubscriptionInFlight, subscriptionId, 1)
    count(this.#perOwnerInFlight, owner, 1)
    this.#leases.set(delivery.id, lease)
    const attempt = this.#attempt(delivery, lease).finally(() => {
      this.#inFlight.delete(attempt)
      this.#leases.delete(delivery.id)
      count(this.#perSubscriptionInFlight, subscriptionId, -1)
      count(this.#perOwnerInFlight, owner, -1)
      // A slot is free: more may be due.
      this.wake()
    })
    this.#inFlight.add(attempt)
  }

  /** Never rejects: every failure is an outcome, recorded or reported. */
  async #attempt (delivery: ClaimedDelivery, lease: string): Promise<void> {
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
    // The wait before a retry runs from the end of this attempt: counted from its start, an attempt
    // that took its whole time limit (a receiver that never answers) would be retried at once.
    const outcome = verdict({ ...(statusCode !== undefined && { statusCode }), attempts, attemptedAt: this.#now() }, this.#schedule, this.#jitter, this.#random)
    const completion = this.#completion(delivery, lease, attemptedAt, result, outcome, durationMs)
    let recorded = false
    try {
      const done = await this.#store.completeDelivery(completion)
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
   * Sends a signed `webhook.test` event to the subscription now, outside the outbox (nothing is
   * stored or retried), and resolves with the attempt's outcome.
   */
  async sendTest (subscription: { id: bigint, url: string, secret: string }): Promise<TestAttempt> {
    const attemptedAt = this.#now()
    const messageId = newMessageId()
    const started = performance.now()
    const result = await this.#send({
      id: 0n,
      subscriptionId: subscription.id,
      owner: '',
      messageId,
      // Not sent: the body carries the type.
      eventType: 'plant.created',
      payload: testEventPayload(subscription.id, attemptedAt),
      attempts: 0,
      url: subscription.url,
      secrets: [subscription.secret],
      origin: {}
    }, attemptedAt, undefined)
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

  async #send (delivery: ClaimedDelivery, attemptedAt: number, extraHeaders: Record<string, string> | undefined): Promise<AttemptResult> {
    let request: AttemptRequest
    try {
      request = this.#signedRequest(delivery, attemptedAt)
      if (extraHeaders !== undefined) request.headers = { ...extraHeaders, ...request.headers }
    } catch (err) {
      // A stored secret that cannot sign: a failed attempt like any other (retried, then failed),
      // never an exception that would leave the delivery leased with nobody to record it.
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
  #signedRequest (delivery: ClaimedDelivery, attemptedAt: number): AttemptRequest {
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
      // The generic signature cannot see that args fit K; they do by construction.
      (this.emit as (event: K, ...args: DispatcherEvents[K]) => boolean)(event, ...args)
    } catch (err) {
      process.emitWarning(`a webhook dispatcher '${event}' listener threw: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
}

/** Adds `by` to the count of `key`, forgetting it at 0. */
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
