/** Read when metrics are scraped: the metrics plugin makes gauges of it, the store knows nothing of them. */
export interface PoolStats {
  /** Which pool: `api`, `webhooks`, `dispatcher`, `sandbox`, `sandbox-dispatcher`, `sandbox-registry`. */
  pool: string
  max: number
  idle: number
  /** Connections checked out by a caller (open minus idle). */
  busy: number
  waiting: number
}

/** What reports its pools: a store, a webhook store, a sandbox backend. */
export interface PoolReporter {
  poolStats?: () => PoolStats[]
}
