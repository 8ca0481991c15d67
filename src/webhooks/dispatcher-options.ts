import type { RequestFunction } from './deliver.js'
import { HEARTBEAT_INTERVAL_MS } from './delivery-queue.js'
import type { AttemptTrace } from './dispatcher-events.js'
import { DEFAULT_JITTER, DEFAULT_RETRY_SCHEDULE_MS } from './schedule.js'
import type { ClaimedDelivery, WebhookStore } from './store-contract.js'
import type { AddressPolicy } from './url-policy.js'

// The dispatcher's settings: their defaults (WEBHOOK_* are read over them) and their checks.
export const DEFAULT_TIMEOUT_MS = 10_000
export const DEFAULT_CONCURRENCY = 10
export const DEFAULT_PER_SUBSCRIPTION = 2
export const DEFAULT_POLL_INTERVAL_MS = 1000
export const DEFAULT_DISABLE_AFTER_MS = 5 * 24 * 3_600_000
export const DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000
const DEFAULT_PRUNE_INTERVAL_MS = 3_600_000
export const DEFAULT_STOP_GRACE_MS = 10_000
/** A lease's length where the store renews leases (PostgreSQL): how long a dead instance's claims outlive it. */
const HEARTBEAT_LEASE_MS = 10_000
// Busy-API pacing of attempts: see docs/performance.md#what-the-measurements-decided.
export const DEFAULT_BUSY_INTERVAL_MS = 100
/** An answer this fast earns its subscription one more attempt in flight: see DeliverySlots.answered. */
const DEFAULT_FAST_ATTEMPT_MS = 100

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
  /** The monotonic clock the pace is kept on (performance.now): a test reads the very instants it paces. */
  clock?: () => number
  /** A 2xx answered within this many ms earns its subscription one more attempt in flight (up to concurrency). */
  fastAttemptMs?: number
}

const positive = (value: number, name: string): number => {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`)
  return value
}

/** Renewed leases outlast a missed beat or two; unrenewed ones need a wide margin past the attempt. */
function leaseLength (options: DispatcherOptions, timeoutMs: number): number {
  const heartbeat = options.store.renewLeases !== undefined
  const leaseMs = positive(options.leaseMs ?? (heartbeat ? HEARTBEAT_LEASE_MS : timeoutMs + 60_000), 'leaseMs')
  if (!heartbeat && leaseMs <= timeoutMs) throw new RangeError('leaseMs must exceed timeoutMs')
  if (heartbeat && leaseMs <= HEARTBEAT_INTERVAL_MS) throw new RangeError('leaseMs must exceed the heartbeat interval')
  return leaseMs
}

/** The options with their defaults, each checked: the first bad one, in this order, is named. */
export function dispatcherSettings (options: DispatcherOptions) {
  const concurrency = positive(options.concurrency ?? DEFAULT_CONCURRENCY, 'concurrency')
  const perSubscription = positive(options.perSubscription ?? DEFAULT_PER_SUBSCRIPTION, 'perSubscription')
  const timeoutMs = positive(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, 'timeoutMs')
  return {
    concurrency,
    perSubscription,
    timeoutMs,
    schedule: options.schedule ?? DEFAULT_RETRY_SCHEDULE_MS,
    jitter: options.jitter ?? DEFAULT_JITTER,
    leaseMs: leaseLength(options, timeoutMs),
    pollIntervalMs: positive(options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS, 'pollIntervalMs'),
    disableAfterMs: positive(options.disableAfterMs ?? DEFAULT_DISABLE_AFTER_MS, 'disableAfterMs'),
    retentionMs: positive(options.retentionMs ?? DEFAULT_RETENTION_MS, 'retentionMs'),
    pruneIntervalMs: positive(options.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS, 'pruneIntervalMs'),
    random: options.random ?? Math.random,
    now: options.now ?? Date.now,
    busyIntervalMs: positive(options.busyIntervalMs ?? DEFAULT_BUSY_INTERVAL_MS, 'busyIntervalMs'),
    fastAttemptMs: positive(options.fastAttemptMs ?? DEFAULT_FAST_ATTEMPT_MS, 'fastAttemptMs')
  }
}
