import type Database from 'better-sqlite3'
import type { StorageLimits } from '../trim.js'

/**
 * Deletes the oldest rows past `limits`, in one write transaction. Chosen ids past the limit are
 * forgotten only once the sequence has moved past them: a deleted id is still never handed out again.
 */
export function sqliteTrim (db: Database.Database): (limits: StorageLimits) => void {
  const statements = {
    keys: db.prepare<[number], unknown>(
      'DELETE FROM idempotency_keys WHERE (scope, key) IN ' +
        '(SELECT scope, key FROM idempotency_keys ORDER BY created_at DESC, key LIMIT -1 OFFSET ?)'),
    passChosen: db.prepare<[number, number], unknown>(
      `UPDATE sqlite_sequence SET seq = max(seq, (SELECT id FROM chosen_ids ORDER BY id DESC LIMIT 1 OFFSET ?))
       WHERE name = 'plants' AND (SELECT id FROM chosen_ids ORDER BY id DESC LIMIT 1 OFFSET ?) IS NOT NULL`),
    forgetChosen: db.prepare<[], unknown>(
      'DELETE FROM chosen_ids WHERE id <= (SELECT seq FROM sqlite_sequence WHERE name = \'plants\')'),
    deliveries: db.prepare<[number], unknown>(
      'DELETE FROM webhook_deliveries WHERE id IN ' +
        '(SELECT id FROM webhook_deliveries ORDER BY id DESC LIMIT -1 OFFSET ?)'),
    events: db.prepare<[number], unknown>(
      'DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events ORDER BY id DESC LIMIT -1 OFFSET ?)')
  }
  return (limits) => {
    statements.keys.run(limits.keys)
    statements.passChosen.run(limits.chosenIds, limits.chosenIds)
    statements.forgetChosen.run()
    statements.deliveries.run(limits.deliveries)
    statements.events.run(limits.events)
  }
}
