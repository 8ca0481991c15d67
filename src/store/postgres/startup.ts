import { setTimeout as sleep } from 'node:timers/promises'
import { StoreOpenError } from '../../errors.js'
import { isConnectionError } from './connection.js'

export interface StartupRetry {
  /** How long to keep trying, in ms, from the first attempt; 0 tries once. */
  timeoutMs: number
  /** Told before each wait: what failed, the attempt that failed (1, 2, …), and the wait before the next. */
  onRetry?: (err: Error, attempt: number, delayMs: number) => void
}

/** The first wait; each next one doubles, up to MAX_DELAY_MS. */
const FIRST_DELAY_MS = 200
const MAX_DELAY_MS = 5000

/**
 * Runs `attempt` until it succeeds, retrying with exponential backoff while it fails because the
 * database cannot be reached, for up to `timeoutMs`: a PostgreSQL that starts after this instance
 * (the usual order in a fresh cluster or a compose file) is waited for instead of being a failed start.
 * Any other failure (wrong password, a newer schema) is not retried: waiting would not fix it.
 * Past the deadline it gives up with a StoreOpenError that says for how long it tried.
 */
export async function retryUntilReachable<T> (attempt: () => Promise<T>, { timeoutMs, onRetry }: StartupRetry): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (let attempts = 1; ; attempts++) {
    try {
      return await attempt()
    } catch (err) {
      if (!isConnectionError(err)) throw err
      const delayMs = Math.min(FIRST_DELAY_MS * 2 ** (attempts - 1), MAX_DELAY_MS, Math.max(0, deadline - Date.now()))
      if (delayMs <= 0) {
        if (timeoutMs === 0) throw err
        throw new StoreOpenError(`the database could not be reached within PG_STARTUP_TIMEOUT_MS (${timeoutMs} ms, ${attempts} attempts): ${(err as Error).message}`, { cause: err })
      }
      onRetry?.(err as Error, attempts, delayMs)
      await sleep(delayMs)
    }
  }
}
