import { performance } from 'node:perf_hooks'
import type { ClaimShape } from './delivery-queue.js'

export interface SlotOptions {
  concurrency: number
  perSubscription: number
  fastAttemptMs: number
  busyIntervalMs: number
  apiBusy?: () => boolean
  /** A slot is free again (its request ended): a claim can fill it. */
  onFree: () => void
  /** An attempt is over, its completion written too. */
  onSettled: () => void
  clock?: () => number
}

/** What the next claim may take now: nothing, nothing for `ms` (the pace), or so much. */
export type ClaimPlan =
  | { kind: 'full' }
  | { kind: 'wait', ms: number }
  | { kind: 'claim', busy: boolean, shape: ClaimShape }

/** How many attempts run at once, shared fairly between owners and subscriptions, and paced while the API is busy. */
export class DeliverySlots {
  readonly #options: SlotOptions
  readonly #concurrency: number
  readonly #perSubscription: number
  readonly #clock: () => number
  /** Attempts whose request has not ended (the rest of #inFlight are writing their completion). */
  #sending = 0
  readonly #inFlight = new Set<Promise<void>>()
  readonly #perSubscriptionInFlight = new Map<bigint, number>()
  readonly #perOwnerInFlight = new Map<string, number>()
  /** Slots a fast receiver earned beyond perSubscription: held briefly, they starve no one. */
  readonly #allowance = new Map<bigint, number>()
  /** Whose each subscription is, for the slots its fast receiver earned its owner. */
  readonly #ownerOf = new Map<bigint, string>()
  /** How many owners have enabled subscriptions: with more than one, each gets its share of the slots. */
  owners = 1
  #lastStart = -Infinity

  constructor (options: SlotOptions) {
    this.#options = options
    this.#concurrency = options.concurrency
    this.#perSubscription = options.perSubscription
    this.#clock = options.clock ?? performance.now.bind(performance)
  }

  get inFlight (): number { return this.#inFlight.size }

  isApiBusy (): boolean { return this.#options.apiBusy?.() === true }

  // While the API is busy, one attempt at a time, paced: see docs/performance.md#what-the-measurements-decided.
  plan (): ClaimPlan {
    const busy = this.isApiBusy()
    const limit = this.#free(busy)
    if (limit <= 0) return { kind: 'full' }
    const wait = this.paceWait(busy)
    if (wait > 0) return { kind: 'wait', ms: wait }
    const skipSubscriptions = [...this.#perSubscriptionInFlight]
      .filter(([id, count]) => count >= this.#allowed(id))
      .map(([id]) => id)
    const perSubscription = Math.max(this.#perSubscription, ...this.#allowance.values())
    const skipOwners = [...this.#perOwnerInFlight]
      .filter(([owner, count]) => count >= this.#ownerLimit(owner))
      .map(([owner]) => owner)
    return { kind: 'claim', busy, shape: { limit, perSubscription, skipSubscriptions, skipOwners } }
  }

  mayStart (subscriptionId: bigint, owner: string, busy: boolean): boolean {
    return this.#free(busy) > 0 &&
      (this.#perSubscriptionInFlight.get(subscriptionId) ?? 0) < this.#allowed(subscriptionId) &&
      (this.#perOwnerInFlight.get(owner) ?? 0) < this.#ownerLimit(owner)
  }

  /** How long until the next attempt may start while the API is busy (always, in a sandbox); 0 or less: now. */
  paceWait (busy: boolean): number {
    return busy ? this.#lastStart + this.#options.busyIntervalMs - this.#clock() : 0
  }

  /** Runs `attempt` in a slot: `sent` (called at the latest when it ends) frees the slot; until it ends it counts. */
  hold<T> (subscriptionId: bigint, owner: string, attempt: (sent: () => void) => Promise<T>): Promise<T> {
    this.#lastStart = this.#clock()
    this.#ownerOf.set(subscriptionId, owner)
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
      if (!this.#perSubscriptionInFlight.has(subscriptionId) && !this.#allowance.has(subscriptionId)) {
        this.#ownerOf.delete(subscriptionId)
      }
      this.#options.onFree()
    }
    const running = attempt(sent).finally(() => {
      sent()
      this.#inFlight.delete(settled)
      this.#options.onSettled()
    })
    const settled = running.then(() => {}, () => {})
    this.#inFlight.add(settled)
    return running
  }

  /** A fast 2xx earns the subscription one more slot (up to concurrency); any other answer takes them back. */
  answered (subscriptionId: bigint, statusCode: number | undefined, durationMs: number): void {
    const fast = durationMs <= this.#options.fastAttemptMs
    if (statusCode !== undefined && statusCode >= 200 && statusCode < 300 && fast) {
      const most = Math.max(this.#concurrency, this.#perSubscription)
      this.#allowance.set(subscriptionId, Math.min(this.#allowed(subscriptionId) + 1, most))
    } else {
      this.#allowance.delete(subscriptionId)
    }
  }

  /** Resolves once nothing is in flight, attempts started meanwhile included. */
  async allSettled (): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight])
  }

  /** A slot frees when its request ends, its completion written meanwhile (at most `concurrency` waiting). */
  #free (busy: boolean): number {
    return busy
      ? 1 - this.#inFlight.size
      : Math.min(this.#concurrency - this.#sending, 2 * this.#concurrency - this.#inFlight.size)
  }

  #allowed (subscriptionId: bigint): number { return this.#allowance.get(subscriptionId) ?? this.#perSubscription }

  /** No preemption: with several owners each holds its share (at least one), plus what its fast receivers earned. */
  #ownerLimit (owner: string): number {
    if (this.owners <= 1) return this.#concurrency
    let earned = 0
    for (const [subscriptionId, allowed] of this.#allowance) {
      if (this.#ownerOf.get(subscriptionId) === owner) earned += allowed - this.#perSubscription
    }
    return Math.min(this.#concurrency, Math.max(1, Math.floor(this.#concurrency / this.owners)) + earned)
  }
}

function count<K> (counts: Map<K, number>, key: K, by: number): void {
  const next = (counts.get(key) ?? 0) + by
  if (next > 0) counts.set(key, next)
  else counts.delete(key)
}
