/**
 * One connection pool's state as plain data, read when metrics are scraped: what the metrics
 * plugin turns into gauges, without the store knowing of them.
 */
export interface PoolStats {
  /** Which pool: `api`, `webhooks`, `dispatcher`, `sandbox`, `sandbox-dispatcher`, `sandbox-registry`. */
  pool: string
  /** Connections it may open at most. */
  max: number
  idle: number
  /** Connections checked out by a caller (open minus idle). */
  busy: number
  /** Callers queued for a connection of a full pool. */
  waiting: number
}

/** What reports its pools: a store, a webhook store, a sandbox backend. */
export interface PoolReporter {
  poolStats?: () => PoolStats[]
}
