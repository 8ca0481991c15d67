import { isConnectionError } from './connection.js'

/**
 * Concurrent writes of one kind sharing one call, one transaction and one commit, as the SQLite
 * store's group commit does: a write that arrives while `MAX_IN_FLIGHT` calls are under way waits
 * for the next, which takes every write waiting (up to `MAX_BATCH`). Idle, a write goes at once,
 * alone. One call saves each write but the first its round trip, its statement's parse and its
 * commit's WAL flush; every write is answered only after the call that made it has committed.
 */

/** Two: one call's commit waits for its flush while the next runs. */
const MAX_IN_FLIGHT = 2
/** Bounds the locks and the work one transaction holds (its statement_timeout bounds it in time). */
const MAX_BATCH = 64

export interface WriteBatch<I, O> {
  /** `input`'s outcome in the call that wrote it, after that call committed. */
  submit: (input: I) => Promise<O>
}

interface Pending<I, O> {
  input: I
  resolve: (value: O) => void
  reject: (reason: unknown) => void
}

/**
 * `run` writes every input in one transaction and gives one outcome each, in order. When it fails,
 * the transaction rolled back: unless the connection failed (the commit's fate unknown, so nothing
 * may be written again), each input of a call of several is written again alone, so that a failure
 * is only the failing write's (a deadlock between two calls, a value one input alone breaks).
 */
export function writeBatch<I, O> (run: (inputs: readonly I[]) => Promise<readonly O[]>): WriteBatch<I, O> {
  let waiting: Array<Pending<I, O>> = []
  let inFlight = 0

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
    while (inFlight < MAX_IN_FLIGHT && waiting.length > 0) {
      const batch = waiting.length <= MAX_BATCH ? waiting : waiting.slice(0, MAX_BATCH)
      waiting = waiting.length <= MAX_BATCH ? [] : waiting.slice(MAX_BATCH)
      inFlight++
      void settle(batch).finally(() => {
        inFlight--
        flush()
      })
    }
  }

  return {
    submit: async (input) => await new Promise<O>((resolve, reject) => {
      waiting.push({ input, resolve, reject })
      flush()
    })
  }
}
