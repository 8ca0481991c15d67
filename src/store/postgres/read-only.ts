import type pg from 'pg'
import { ReadOnlyDatabaseError } from '../../lib/errors.js'

/**
 * A ping that also asks whether the database takes writes: a standby, a demoted primary or
 * default_transaction_read_only answers every read and refuses every write (25006), and readiness
 * must say so. One statement, as `SELECT 1` was.
 */
export async function pingWritable (pool: pg.Pool): Promise<void> {
  const { rows: [row] } = await pool.query<{ read_only: string }>(
    "SELECT current_setting('transaction_read_only') AS read_only")
  if (row?.read_only === 'on') throw new ReadOnlyDatabaseError()
}
