import type Database from 'better-sqlite3'
import type { StorageLimits } from '../trim.js'

/** Deletes the oldest rows past `limits`; chosen ids only once the sequence passed them (never reused). */
export function sqliteTrim (
  db: Database.Database, sequences: ReadonlyArray<{ table: string, resource: string }>
): (limits: StorageLimits) => void {
  const oldest = (table: string): Database.Statement<[number], unknown> => db.prepare(
    `DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} ORDER BY id DESC LIMIT -1 OFFSET ?)`)
  const statements = {
    keys: db.prepare<[number], unknown>(
      'DELETE FROM idempotency_keys WHERE (resource, scope, key) IN ' +
        '(SELECT resource, scope, key FROM idempotency_keys ORDER BY created_at DESC, key LIMIT -1 OFFSET ?)'),
    // Per resource: each has its own sequence and its own chosen ids.
    passChosen: db.prepare<{ resource: string, table: string, keep: number }, unknown>(
      `UPDATE sqlite_sequence
       SET seq = max(seq, (SELECT id FROM chosen_ids WHERE resource = @resource ORDER BY id DESC LIMIT 1 OFFSET @keep))
       WHERE name = @table
         AND (SELECT id FROM chosen_ids WHERE resource = @resource ORDER BY id DESC LIMIT 1 OFFSET @keep) IS NOT NULL`),
    forgetChosen: db.prepare<{ resource: string, table: string }, unknown>(
      'DELETE FROM chosen_ids ' +
        'WHERE resource = @resource AND id <= (SELECT seq FROM sqlite_sequence WHERE name = @table)'),
    deliveries: oldest('webhook_deliveries'),
    events: oldest('webhook_events')
  }
  return (limits) => {
    statements.keys.run(limits.keys)
    for (const sequence of sequences) {
      statements.passChosen.run({ ...sequence, keep: limits.chosenIds })
      statements.forgetChosen.run(sequence)
    }
    statements.deliveries.run(limits.deliveries)
    statements.events.run(limits.events)
  }
}
