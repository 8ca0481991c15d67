/** The Standard Webhooks / Svix schedule: eight attempts over about 28 hours. */
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

/** The wait once `attempts` attempts have failed; undefined when the schedule is spent. */
export function retryDelay (
  schedule: readonly number[], attempts: number, jitter = DEFAULT_JITTER, random: () => number = Math.random
): number | undefined {
  const base = schedule[attempts - 1]
  if (base === undefined) return undefined
  return Math.max(0, Math.round(base * (1 - jitter + 2 * jitter * random())))
}

type AttemptVerdict =
  | { status: 'succeeded' }
  /** 410 Gone: the receiver asks to hear no more; the delivery fails and the subscription is disabled. */
  | { status: 'gone' }
  | { status: 'retry'; nextAttemptAt: number }
  | { status: 'failed' }

interface VerdictInput {
  statusCode?: number
  /** Attempts made, this one included. */
  attempts: number
  attemptedAt: number
}

export function verdict (
  { statusCode, attempts, attemptedAt }: VerdictInput, schedule: readonly number[],
  jitter = DEFAULT_JITTER, random: () => number = Math.random
): AttemptVerdict {
  if (statusCode !== undefined && statusCode >= 200 && statusCode < 300) return { status: 'succeeded' }
  if (statusCode === 410) return { status: 'gone' }
  const delay = retryDelay(schedule, attempts, jitter, random)
  return delay === undefined ? { status: 'failed' } : { status: 'retry', nextAttemptAt: attemptedAt + delay }
}
