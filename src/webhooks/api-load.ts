import { performance, type EventLoopUtilization } from 'node:perf_hooks'

/** How often the load is sampled: the dispatcher reacts within one interval. */
export const API_LOAD_INTERVAL_MS = 100
/** Event-loop utilization from which the API counts as busy (it is the loop's time, not the machine's). */
export const API_BUSY_UTILIZATION = 0.9
/**
 * Once busy, the API stays busy until utilization drops below this. Measured while deliveries run
 * at full speed, utilization includes them: a service whose requests alone keep the loop 80 %
 * busy (durable writes waiting for the disk) would otherwise flip every interval, and deliver at
 * full speed every other one, at the cost of a third of its throughput in the benchmark.
 */
export const API_IDLE_UTILIZATION = 0.7

export interface ApiLoadOptions {
  intervalMs?: number
  threshold?: number
  /** Below this a busy API is no longer busy (API_IDLE_UTILIZATION; at most threshold). */
  releaseBelow?: number
  /** The loop's utilization since the last call (tests); performance.eventLoopUtilization by default. */
  utilization?: () => number
}

/**
 * Whether the API needs the CPU, for the webhook dispatcher to yield to it (WebhookDispatcher's
 * `apiBusy`). Busy means, over the last interval, both an event loop at least `threshold` utilized
 * (`releaseBelow` once busy) and requests served: utilization alone would also count the
 * dispatcher's own work, and a dispatcher catching up on a backlog with no API traffic would
 * throttle itself for nothing.
 */
export class ApiLoadMonitor {
  readonly #intervalMs: number
  readonly #threshold: number
  readonly #releaseBelow: number
  readonly #utilization: () => number
  #requests = 0
  #busy = false
  #timer: NodeJS.Timeout | undefined

  constructor (options: ApiLoadOptions = {}) {
    this.#intervalMs = options.intervalMs ?? API_LOAD_INTERVAL_MS
    this.#threshold = options.threshold ?? API_BUSY_UTILIZATION
    this.#releaseBelow = Math.min(options.releaseBelow ?? API_IDLE_UTILIZATION, this.#threshold)
    this.#utilization = options.utilization ?? loopUtilization()
  }

  /** Call once per API request. */
  countRequest (): void {
    this.#requests++
  }

  /** As of the last sample. */
  get busy (): boolean {
    return this.#busy
  }

  /** Takes a sample: the utilization and the requests since the previous one. */
  sample (): void {
    const utilization = this.#utilization()
    this.#busy = this.#requests > 0 && utilization >= (this.#busy ? this.#releaseBelow : this.#threshold)
    this.#requests = 0
  }

  start (): void {
    if (this.#timer !== undefined) return
    this.#utilization()
    this.#timer = setInterval(() => { this.sample() }, this.#intervalMs)
    this.#timer.unref()
  }

  stop (): void {
    clearInterval(this.#timer)
    this.#timer = undefined
    this.#busy = false
  }
}

/** The event loop's utilization since the previous call (the first call: since the process started). */
function loopUtilization (): () => number {
  let last: EventLoopUtilization | undefined
  return () => {
    const now = performance.eventLoopUtilization()
    const since = last === undefined ? now : performance.eventLoopUtilization(now, last)
    last = now
    return since.utilization
  }
}
