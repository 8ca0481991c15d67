import { isConnectionError } from './connection.js'

// Concurrent writes share one call and commit, as SQLite's group commit: a round trip, parse and WAL flush each.

/** Two: one call's commit waits for its flush while the next runs. */
const MAX_IN_FLIGHT = 2
/** Bounds the locks and the work one transaction holds (its statement_timeout bounds it in time). */
const MAX_BATCH = 64

export interface WriteBatch<I, O> {
  submit: (input: I) => Promise<O>
}

interface Pending<I, O> {
  input: I
  resolve: (value: O) => void
  reject: (reason: unknown) => void
}

/** A failed call is written again one by one, so a failure is its write's (not after a lost connection). */
export function writeBatch<I, O> (run: (inputs: readonly I[]) => Promise<readonly O[]>): WriteBatch<I, O> {
  const waiting: Array<Pending<I, O>> = []
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
      const batch = waiting.splice(0, MAX_BATCH)
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
