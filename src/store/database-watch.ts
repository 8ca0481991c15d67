interface DatabaseWatchOptions {
  /** The readiness probe: rejects with why the database does not answer. */
  probe: () => Promise<void>
  log: {
    error: (details: object, message: string) => void
    warn: (details: object, message: string) => void
  }
  /** Probes an unreachable database again, so its return is told without traffic. */
  recheckMs?: number
  /** Failed requests of an outage are told as one line per period, with their count. */
  summaryMs?: number
  now?: () => number
}

const DATABASE_RECHECK_MS = 1000
export const FAILURE_SUMMARY_MS = 10_000

/**
 * Whether the database answers, logged once per change rather than once per request (the cause when
 * it goes, how long it was away when it is back); requests failed meanwhile are counted.
 */
export class DatabaseWatch {
  readonly #options: DatabaseWatchOptions
  readonly #now: () => number
  #up = true
  #downSince = 0
  #probing: Promise<void> | undefined
  #recheck: NodeJS.Timeout | undefined
  #summary: NodeJS.Timeout | undefined
  #summaryFrom = 0
  #requestTold = false
  readonly #counts = { request: 0, dispatcher: 0 }
  #closed = false

  constructor (options: DatabaseWatchOptions) {
    this.#options = options
    this.#now = options.now ?? Date.now
  }

  get up (): boolean { return this.#up }

  async probe (): Promise<void> {
    this.#probing ??= this.#options.probe().then(
      () => { this.#reachable() },
      (err: unknown) => {
        this.#unreachable(err)
        throw err
      }
    ).finally(() => { this.#probing = undefined })
    await this.#probing
  }

  /** A failure: true when it is to be logged on its own; of an outage's requests only the first, the rest counted. */
  failed (source: 'request' | 'dispatcher'): boolean {
    if (this.#closed) return true
    if (this.#up) {
      // A dispatcher failure is told unless a probe is already asking; while down the recheck probes, not each failure.
      const told = source === 'dispatcher' && this.#probing === undefined
      this.probe().catch(() => {})
      if (told) return true
    }
    this.#openSummary()
    if (source === 'request' && !this.#requestTold) {
      this.#requestTold = true
      return true
    }
    this.#counts[source]++
    return false
  }

  close (): void {
    this.#closed = true
    clearTimeout(this.#recheck)
    this.#summarize()
  }

  /** Never what keeps a stopping process alive. */
  #timer (run: () => void, ms: number): NodeJS.Timeout {
    return setTimeout(run, ms).unref()
  }

  #openSummary (): void {
    if (this.#summary !== undefined) return
    this.#summaryFrom = this.#now()
    this.#summary = this.#timer(() => { this.#summarize() }, this.#options.summaryMs ?? FAILURE_SUMMARY_MS)
  }

  #summarize (): void {
    clearTimeout(this.#summary)
    this.#summary = undefined
    if (this.#up) this.#requestTold = false
    const { request, dispatcher } = this.#counts
    if (request + dispatcher === 0) return
    this.#options.log.error(
      { failedRequests: request, dispatcherErrors: dispatcher, periodMs: this.#now() - this.#summaryFrom },
      'failures while the database was unavailable'
    )
    this.#counts.request = 0
    this.#counts.dispatcher = 0
  }

  #unreachable (err: unknown): void {
    if (!this.#up) return
    this.#up = false
    this.#downSince = this.#now()
    this.#options.log.error({ cause: rootCause(err), err }, 'the database is unreachable')
    this.#scheduleRecheck()
  }

  #reachable (): void {
    if (this.#up) return
    this.#up = true
    clearTimeout(this.#recheck)
    this.#recheck = undefined
    this.#summarize()
    this.#options.log.warn({ downMs: this.#now() - this.#downSince }, 'the database is back')
  }

  #scheduleRecheck (): void {
    if (this.#closed) return
    this.#recheck = this.#timer(() => {
      this.probe().catch(() => { this.#scheduleRecheck() })
    }, this.#options.recheckMs ?? DATABASE_RECHECK_MS)
  }
}

/** The innermost cause's message: the driver's own words (`connect ECONNREFUSED …`), not the 503's. */
function rootCause (err: unknown): string {
  let inner = err
  while (inner instanceof Error && inner.cause !== undefined) inner = inner.cause
  return inner instanceof Error ? inner.message : String(inner)
}
