import { performance, type EventLoopUtilization } from 'node:perf_hooks'

const API_LOAD_INTERVAL_MS = 100
/** The event loop's utilization, not the machine's. */
const API_BUSY_UTILIZATION = 0.9
/** Hysteresis, as the utilization includes deliveries: see docs/performance.md#what-the-measurements-decided. */
const API_IDLE_UTILIZATION = 0.7

export interface ApiLoadOptions {
  intervalMs?: number
  threshold?: number
  releaseBelow?: number
  utilization?: () => number
}

/** Busy needs requests served too: utilization alone counts the dispatcher's own work, and it would throttle itself. */
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

  countRequest (): void { this.#requests++ }

  get busy (): boolean { return this.#busy }

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

function loopUtilization (): () => number {
  let last: EventLoopUtilization | undefined
  return () => {
    const now = performance.eventLoopUtilization()
    const since = last === undefined ? now : performance.eventLoopUtilization(now, last)
    last = now
    return since.utilization
  }
}
