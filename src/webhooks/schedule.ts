/**
 * The waits before each retry, after the first attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h
 * (the Standard Webhooks / Svix schedule), so eight attempts over about 28 hours.
 */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000
]

/** ±20 %: receivers that failed together (an outage) are not all retried in the same instant. */
export const DEFAULT_JITTER = 0.2

/**
 * The wait before the next attempt once `attempts` attempts have failed, or undefined when the
 * schedule is spent (the delivery has failed). `random` returns [0, 1), like Math.random.
 */
export function retryDelay (
  schedule: readonly number[],
  attempts: number,
  jitter = DEFAULT_JITTER,
  random: () => number = Math.random
): number | undefined {
  const base = schedule[attempts - 1]
  if (base === undefined) return undefined
  return Math.max(0, Math.round(base * (1 - jitter + 2 * jitter * random())))
}

/** What becomes of a delivery after an attempt. */
export type AttemptVerdict =
  /** A 2xx: done. */
  | { status: 'succeeded' }
  /** 410 Gone: the receiver asks to hear no more; the delivery fails and the subscription is disabled. */
  | { status: 'gone' }
  | { status: 'retry'; nextAttemptAt: number }
  | { status: 'failed' }

export interface VerdictInput {
  /** The answer's status, if there was an answer. */
  statusCode?: number
  /** Attempts made, this one included. */
  attempts: number
  attemptedAt: number
}

export function verdict (
  { statusCode, attempts, attemptedAt }: VerdictInput,
  schedule: readonly number[],
  jitter = DEFAULT_JITTER,
  random: () => number = Math.random
): AttemptVerdict {
  if (statusCode !== undefined && statusCode >= 200 && statusCode < 300) return { status: 'succeeded' }
  if (statusCode === 410) return { status: 'gone' }
  const delay = retryDelay(schedule, attempts, jitter, random)
  return delay === undefined ? { status: 'failed' } : { status: 'retry', nextAttemptAt: attemptedAt + delay }
}
