import type pg from 'pg'
import type { EnqueueEvent } from './webhook-store.js'

/** What a repository of a PostgreSQL store is given by the store that opened the database. */
export interface PostgresRepositoryContext {
  pool: pg.Pool
  /** DATABASE_URL's schema: statements name their tables in it. */
  schema: string | undefined
  enqueue: EnqueueEvent
  /** Maps a driver's failure to the ServiceError a client may see. */
  guard: <T>(work: () => Promise<T>) => Promise<T>
  /** Whether this write's event should NOTIFY other instances (at most one per interval). */
  claimNotify: (now: number) => boolean
  /** After the commit: wakes this process's dispatchers when the write made deliveries. */
  afterCommit: <T>(result: T, deliveries: number) => T
}
