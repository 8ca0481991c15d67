import { randomBytes } from 'node:crypto'
import { EventEmitter, setMaxListeners } from 'node:events'
import { attempt, sender, type AttemptContext } from './attempt.js'
import { createConnectionPool } from './deliver.js'
import { DeliveryQueue } from './delivery-queue.js'
import type { DispatcherEvents } from './dispatcher-events.js'
import { DEFAULT_STOP_GRACE_MS, dispatcherSettings, type DispatcherOptions } from './dispatcher-options.js'
import { DeliverySlots } from './slots.js'
import type { ClaimedDelivery, WebhookStore } from './store-contract.js'
import { sendTest, type TestAttempt, type TestTarget } from './test-send.js'
import { USER_AGENT } from './user-agent.js'

// The dispatcher's public face: its settings, events and test sends are importable from here.
export * from './dispatcher-options.js'
export type { AttemptEvent, AttemptTrace, DispatcherEvents } from './dispatcher-events.js'
export type { TestAttempt, TestTarget } from './test-send.js'

type State = 'idle' | 'running' | 'stopping' | 'stopped'

/**
 * Delivers the outbox off the request path: claims due deliveries (delivery-queue.ts) as the slots allow (slots.ts)
 * and attempts them (attempt.ts). Woken by wake() after a commit, store notifications, a poll, and freed slots.
 */
export class WebhookDispatcher extends EventEmitter<DispatcherEvents> {
  readonly #store: WebhookStore
  readonly #queue: DeliveryQueue
  readonly #slots: DeliverySlots
  readonly #attempt: AttemptContext
  readonly #settings: ReturnType<typeof dispatcherSettings>
  #state: State = 'idle'
  #wakeSoonPending = false
  #claiming: Promise<void> | undefined
  #claimAgain = false
  #paceTimer: NodeJS.Timeout | undefined
  /** Aborted when a stop's grace period is over: attempts still running give their deliveries back. */
  readonly #abandon = new AbortController()
  readonly #connections = createConnectionPool()
  #pollTimer: NodeJS.Timeout | undefined
  #unlisten: (() => Promise<void>) | undefined
  #stopped: Promise<void> | undefined
  #starting: Promise<void> | undefined

  constructor (options: DispatcherOptions) {
    super()
    const settings = dispatcherSettings(options)
    this.#settings = settings
    this.#store = options.store
    const report = this.#report.bind(this)
    const instanceId = options.instanceId ?? randomBytes(6).toString('hex')
    this.#queue = new DeliveryQueue({ ...settings, store: options.store, instanceId, report })
    this.#slots = new DeliverySlots({
      ...settings,
      ...(options.apiBusy !== undefined && { apiBusy: options.apiBusy }),
      ...(options.clock !== undefined && { clock: options.clock }),
      onFree: () => { this.#wakeSoon() },
      onSettled: () => { this.wake() }
    })
    this.#attempt = {
      ...settings,
      send: sender({
        userAgent: options.userAgent ?? USER_AGENT,
        policy: options.policy,
        timeoutMs: settings.timeoutMs,
        signal: this.#abandon.signal,
        pool: this.#connections,
        ...(options.maxResponseBytes !== undefined && { maxResponseBytes: options.maxResponseBytes }),
        ...(options.request !== undefined && { request: options.request })
      }),
      queue: this.#queue,
      answered: this.#slots.answered.bind(this.#slots),
      traceAttempt: options.traceAttempt,
      report
    }
    // Every attempt in flight listens to it: more than the default 10 is expected, not a leak.
    setMaxListeners(settings.concurrency + 10, this.#abandon.signal)
  }

  get inFlight (): number { return this.#slots.inFlight }

  async start (): Promise<void> {
    if (this.#state !== 'idle') throw new Error('a dispatcher starts once')
    this.#state = 'running'
    this.#pollTimer = setInterval(() => {
      void this.countOwners()
      this.wake()
    }, this.#settings.pollIntervalMs)
    this.#pollTimer.unref()
    this.#queue.start(this.#settings.pruneIntervalMs)
    this.#starting = this.#listen()
    await this.#starting
    void this.countOwners()
    this.#queue.prune()
    this.wake()
  }

  async #listen (): Promise<void> {
    const unlisten = await this.#store.listen?.(() => { this.wake() })
    if (unlisten === undefined) return
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

  /** Lets attempts finish for up to `graceMs`, then releases the rest untouched; call it before closing the store. */
  async stop (graceMs = DEFAULT_STOP_GRACE_MS): Promise<void> {
    this.#stopped ??= this.#stop(graceMs)
    await this.#stopped
  }

  async #stop (graceMs: number): Promise<void> {
    const wasRunning = this.#state === 'running'
    this.#state = 'stopping'
    clearInterval(this.#pollTimer)
    clearTimeout(this.#paceTimer)
    const pruned = this.#queue.stop()
    if (wasRunning) {
      await this.#starting?.catch(() => {})
      await this.#unlisten?.()
      await this.#claiming
      let graceTimer: NodeJS.Timeout | undefined
      const grace = new Promise<void>((resolve) => { graceTimer = setTimeout(resolve, graceMs) })
      await Promise.race([this.#slots.allSettled(), grace])
      clearTimeout(graceTimer)
      this.#abandon.abort()
      await this.#slots.allSettled()
      await pruned
    }
    this.#connections.close()
    this.#state = 'stopped'
  }

  /** Recounts the owners now: a subscription changed, and the next claim must share slots by the new count. */
  async countOwners (): Promise<void> {
    try {
      this.#slots.owners = await this.#store.activeOwners()
    } catch {
      // The last count stands; the next poll counts again.
    }
  }

  async sendTest (target: TestTarget): Promise<TestAttempt> {
    return await sendTest({ slots: this.#slots, send: this.#attempt.send, now: this.#settings.now }, target)
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

  async #claimOnce (): Promise<void> {
    const plan = this.#slots.plan()
    if (plan.kind === 'wait') this.#wakeIn(plan.ms)
    if (plan.kind !== 'claim') return
    const { lease, claimed } = await this.#queue.claim(plan.shape)
    // Slots may have been taken meanwhile (or a stop begun): what cannot start now goes back.
    const unwanted: bigint[] = []
    for (const delivery of claimed) {
      if (this.#state === 'running' && this.#slots.mayStart(delivery.subscriptionId, delivery.owner, plan.busy)) {
        this.#begin(delivery, lease)
      } else {
        unwanted.push(delivery.id)
      }
    }
    await this.#queue.release(lease, unwanted)
  }

  #begin (delivery: ClaimedDelivery, lease: string): void {
    this.#queue.track(delivery.id, lease)
    void this.#slots.hold(delivery.subscriptionId, delivery.owner, async (sent) => {
      try {
        await attempt(this.#attempt, delivery, lease, sent)
      } finally {
        this.#queue.untrack(delivery.id)
      }
    })
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

  #wakeIn (ms: number): void {
    if (this.#paceTimer !== undefined) return
    this.#paceTimer = setTimeout(() => {
      this.#paceTimer = undefined
      this.wake()
    }, Math.ceil(ms))
    this.#paceTimer.unref()
  }

  /** Listeners are logging and metrics: one that throws is reported, and the dispatcher carries on. */
  #report<K extends keyof DispatcherEvents> (event: K, ...args: DispatcherEvents[K]): void {
    try {
      (this.emit as (event: K, ...args: DispatcherEvents[K]) => boolean)(event, ...args)
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err)
      process.emitWarning(`a webhook dispatcher '${event}' listener threw: ${why}`)
    }
  }
}
