import { isConnectionError } from './connection.js'
import { waitedTooLong } from './wait-bound-pool.js'

// Concurrent requests share one call, as SQLite's group commit: a round trip and a statement's start each, and for
// writes a WAL flush. A request joins a call not yet sent, so it sees every write committed before it arrived.

/** Two: one call's answer (or its commit's flush) is awaited while the next runs. */
const MAX_IN_FLIGHT = 2
/** Bounds the locks and the work one call holds (its statement_timeout bounds it in time). */
const MAX_BATCH = 64

export interface CallBatch<I, O> {
  submit: (input: I) => Promise<O>
}

interface Pending<I, O> {
  input: I
  resolve: (value: O) => void
  reject: (reason: unknown) => void
  /** When it began to wait, on the monotonic clock. */
  since: number
}

export interface CallBatchOptions {
  /**
   * How long an input may wait for a call before it is answered as a checkout that waited too long
   * (PG_CONNECT_TIMEOUT_MS): while the pool cannot serve the calls under way, what waits behind them would otherwise
   * wait through each one's bound in turn. 0: no bound. Checked whenever an input comes or a call ends.
   */
  waitMs: number
  now?: () => number
}

/**
 * `run` answers its inputs in order. A failed call is made again input by input, so a failure is its own input's
 * (not after a lost connection: a write's commit may have happened).
 */
export function callBatch<I, O> (
  run: (inputs: readonly I[]) => Promise<readonly O[]>, { waitMs, now = () => performance.now() }: CallBatchOptions
): CallBatch<I, O> {
  const waiting: Array<Pending<I, O>> = []
  let inFlight = 0

  /** Inputs wait in arrival order: the ones past the bound are at the front. */
  const expire = (): void => {
    if (waitMs === 0 || waiting.length === 0) return
    const cutoff = now() - waitMs
    const stale = waiting.findIndex(({ since }) => since > cutoff)
    for (const { reject } of waiting.splice(0, stale === -1 ? waiting.length : stale)) reject(waitedTooLong())
  }

  const settle = async (batch: ReadonlyArray<Pending<I, O>>): Promise<void> => {
    try {
      const outcomes = await run(batch.map(({ input }) => input))
      for (const [i, { resolve }] of batch.entries()) resolve(outcomes[i] as O)
    } catch (err) {
      if (batch.length === 1 || isConnectionError(err)) {
        for (const { reject } of batch) reject(err)
        return
      }
      await Promise.all(batch.map(async ({ input, resolve, reject }) => {
        try {
          resolve((await run([input]))[0] as O)
        } catch (alone) {
          reject(alone)
        }
      }))
    }
  }

  const flush = (): void => {
    expire()
    while (inFlight < MAX_IN_FLIGHT && waiting.length > 0) {
      const batch = waiting.splice(0, MAX_BATCH)
      inFlight++
      void settle(batch).finally(() => {
        inFlight--
        flush()
      })
    }
  }

  return {
    // The caller's own promise, no async wrapper around it: a read's cost is a few such layers.
    submit: (input) => new Promise<O>((resolve, reject) => {
      waiting.push({ input, resolve, reject, since: now() })
      flush()
    })
  }
}
