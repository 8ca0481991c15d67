import type { Report } from './dispatcher-events.js'
import type {
  ClaimedDelivery, ClaimRequest, CompletionResult, DeliveryCompletion, WebhookStore
} from './store-contract.js'

/** How often a live instance renews the leases of its attempts in flight: well within HEARTBEAT_LEASE_MS. */
export const HEARTBEAT_INTERVAL_MS = 3_000
/** Completions written in one round trip at most: bounds a statement's size. */
const COMPLETION_BATCH = 100

interface DeliveryQueueOptions {
  store: WebhookStore
  /** Leases are named after it, so one instance's never collide with another's. */
  instanceId: string
  leaseMs: number
  retentionMs: number
  now: () => number
  report: Report
}

/** What one claim asks for, its lease aside (the queue names it). */
export type ClaimShape = Omit<ClaimRequest, 'lease' | 'now' | 'leaseMs'>

interface PendingCompletion {
  completion: DeliveryCompletion
  resolve: (result: CompletionResult) => void
  reject: (error: unknown) => void
}

/**
 * The outbox's deliveries as a queue: claimed under a lease (renewed where the store can), given back, completed in
 * batches, pruned. A failing store is reported, never thrown: what is not recorded comes due again with its lease.
 */
export class DeliveryQueue {
  readonly #options: DeliveryQueueOptions
  readonly #store: WebhookStore
  readonly #report: Report
  #claims = 0
  /** The lease each attempt in flight holds, by delivery id (the heartbeat renews them). */
  readonly #leases = new Map<bigint, string>()
  readonly #completions: PendingCompletion[] = []
  #flushing = false
  #heartbeatTimer: NodeJS.Timeout | undefined
  #pruneTimer: NodeJS.Timeout | undefined
  #pruning: Promise<void> | undefined
  #stopped = false

  constructor (options: DeliveryQueueOptions) {
    this.#options = options
    this.#store = options.store
    this.#report = options.report
  }

  start (pruneIntervalMs: number): void {
    this.#pruneTimer = setInterval(() => { this.prune() }, pruneIntervalMs)
    this.#pruneTimer.unref()
    if (this.#store.renewLeases !== undefined) {
      this.#heartbeatTimer = setInterval(() => { this.#renew() }, HEARTBEAT_INTERVAL_MS)
      this.#heartbeatTimer.unref()
    }
  }

  /** Settles once a prune under way is over. */
  stop (): Promise<void> {
    this.#stopped = true
    clearInterval(this.#pruneTimer)
    clearInterval(this.#heartbeatTimer)
    return this.#pruning ?? Promise.resolve()
  }

  /** Claims due deliveries under a new lease; none when the store fails. */
  async claim (shape: ClaimShape): Promise<{ lease: string, claimed: ClaimedDelivery[] }> {
    const { instanceId, now, leaseMs } = this.#options
    const lease = `${instanceId}:${++this.#claims}`
    try {
      const claimed = await this.#store.claimDue({ lease, now: now(), leaseMs, ...shape })
      return { lease, claimed }
    } catch (error) {
      this.#report('store-error', { operation: 'claim', error })
      return { lease, claimed: [] }
    }
  }

  track (id: bigint, lease: string): void { this.#leases.set(id, lease) }

  untrack (id: bigint): void { this.#leases.delete(id) }

  /** Gives deliveries back untouched, due at once. */
  async release (lease: string, ids: readonly bigint[]): Promise<void> {
    if (ids.length === 0) return
    try {
      await this.#store.releaseDeliveries(lease, ids)
    } catch (error) {
      // Not given back: they come due again when the lease runs out.
      this.#report('store-error', { operation: 'release', error })
    }
  }

  /** Completions that come in while one batch is written go together in the next: no timer to wait for. */
  async complete (completion: DeliveryCompletion): Promise<CompletionResult> {
    if (this.#store.completeDeliveries === undefined) return await this.#completeAlone(completion)
    return await new Promise((resolve, reject) => {
      this.#completions.push({ completion, resolve, reject })
      if (this.#completions.length === 1 && !this.#flushing) setImmediate(() => { void this.#flush() })
    })
  }

  async #flush (): Promise<void> {
    const completeDeliveries = this.#store.completeDeliveries?.bind(this.#store)
    if (completeDeliveries === undefined) return
    this.#flushing = true
    while (this.#completions.length > 0) {
      const batch = this.#completions.splice(0, COMPLETION_BATCH)
      try {
        const results = await completeDeliveries(batch.map(({ completion }) => completion))
        batch.forEach(({ resolve }, i) => { resolve(results[i] ?? { recorded: false, subscriptionDisabled: false }) })
      } catch (error) {
        this.#report('store-error', { operation: 'complete', error })
        // One row the store cannot write must not fail the rest: each is written on its own.
        await Promise.all(batch.map(async ({ completion, resolve, reject }) => {
          await this.#completeAlone(completion).then(resolve, reject)
        }))
      }
    }
    this.#flushing = false
  }

  /** A refused completion is written again without the receiver's answer: the attempt still counts. */
  async #completeAlone (completion: DeliveryCompletion): Promise<CompletionResult> {
    try {
      return await this.#store.completeDelivery(completion)
    } catch (error) {
      const { responseBody, ...withoutAnswer } = completion
      if (responseBody === undefined) throw error
      this.#report('store-error', { operation: 'complete', error })
      return await this.#store.completeDelivery(withoutAnswer)
    }
  }

  /** A failure is reported, and the next beat tries again. */
  #renew (): void {
    if (this.#leases.size === 0) return
    const leases = [...this.#leases].map(([id, lease]) => ({ id, lease }))
    this.#store.renewLeases?.(leases, this.#options.now() + this.#options.leaseMs).catch((error: unknown) => {
      this.#report('store-error', { operation: 'renew', error })
    })
  }

  prune (): void {
    if (this.#stopped || this.#pruning !== undefined) return
    this.#pruning = this.#store.pruneDeliveries(this.#options.now() - this.#options.retentionMs).then(
      (deleted) => { if (deleted > 0) this.#report('pruned', { deleted }) },
      (error: unknown) => { this.#report('store-error', { operation: 'prune', error }) }
    ).finally(() => { this.#pruning = undefined })
  }
}
