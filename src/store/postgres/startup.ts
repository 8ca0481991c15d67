import { setTimeout as sleep } from 'node:timers/promises'
import { StoreOpenError } from '../../lib/errors.js'
import { isConnectionError } from './connection.js'

export interface StartupRetry {
  /** How long to keep trying, in ms, from the first attempt; 0 tries once. */
  timeoutMs: number
  /** Told before each wait: what failed, the attempt that failed (1, 2, …), and the wait before the next. */
  onRetry?: (err: Error, attempt: number, delayMs: number) => void
}

/** Each wait doubles the one before. */
const FIRST_DELAY_MS = 200
const MAX_DELAY_MS = 5000

/** What to do about a failure to start, by PostgreSQL's (or the pooler's) SQLSTATE or the socket's error code. */
const ADVICE: ReadonlyArray<[(code: string, message: string) => boolean, string]> = [
  [(code, message) => code === '08P01' && /unsupported startup parameter/.test(message),
    'take that parameter out of DATABASE_URL: a transaction pooler (PgBouncer) accepts almost none ' +
      '(see docs/scaling.md)'],
  [(code) => code === '28P01', 'check the user name and password in DATABASE_URL'],
  [(code) => code === '28000', 'check the user name in DATABASE_URL, and that the server\'s pg_hba.conf lets it in'],
  [(code) => code === '3D000', 'create that database (createdb) or correct its name in DATABASE_URL'],
  [(code) => code === '42501', 'grant that user what it needs (CREATE on the database, or on the schema)'],
  [(code) => code === 'ECONNREFUSED',
    'nothing listens there: start PostgreSQL (or its pooler), or correct the host and port in DATABASE_URL'],
  [(code) => code === 'ENOTFOUND' || code === 'EAI_AGAIN', 'the host name does not resolve: correct it in DATABASE_URL']
]

/** A refusal that waiting cannot change, though its code (08P01) is also a broken connection's. */
const isRefusedParameter = (err: unknown): boolean =>
  (err as { code?: unknown }).code === '08P01' && err instanceof Error &&
    /unsupported startup parameter/.test(err.message)

/** `err` as the start's failure: the server's reason (never the password), its code, and what to do. */
export function startFailure (err: unknown, prefix = ''): unknown {
  if (!(err instanceof Error) || err instanceof StoreOpenError) return err
  const code = (err as { code?: unknown }).code
  if (typeof code !== 'string') {
    return prefix === '' ? err : new StoreOpenError(`${prefix}${err.message}`, { cause: err })
  }
  const advice = ADVICE.find(([matches]) => matches(code, err.message))?.[1]
  const fromServer = typeof (err as { severity?: unknown }).severity === 'string'
  const reason = fromServer ? `the server refused: ${err.message} (${code})` : err.message
  return new StoreOpenError(`${prefix}${reason}${advice === undefined ? '' : `; ${advice}`}`, { cause: err })
}

/** Waits for a PostgreSQL that starts after this instance; other failures are not retried (waiting cannot help). */
export async function retryUntilReachable<T> (
  attempt: () => Promise<T>, { timeoutMs, onRetry }: StartupRetry
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (let attempts = 1; ; attempts++) {
    try {
      return await attempt()
    } catch (err) {
      if (!isConnectionError(err) || isRefusedParameter(err)) throw startFailure(err)
      const delayMs = Math.min(FIRST_DELAY_MS * 2 ** (attempts - 1), MAX_DELAY_MS, Math.max(0, deadline - Date.now()))
      if (delayMs <= 0) {
        if (timeoutMs === 0) throw startFailure(err)
        throw startFailure(err,
          `the database could not be reached within PG_STARTUP_TIMEOUT_MS (${timeoutMs} ms, ${attempts} attempts): `)
      }
      onRetry?.(err as Error, attempts, delayMs)
      await sleep(delayMs)
    }
  }
}
