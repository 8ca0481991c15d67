import type pg from 'pg'
import type { StorageLimits } from '../trim.js'
import { inTransaction } from './connection.js'

/** The last id the sequence handed out (none yet: one below its start). */
const DRAWN = '(SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM plants_id_seq)'

const SQL = {
  keys: 'DELETE FROM idempotency_keys WHERE (scope, key) IN ' +
    '(SELECT scope, key FROM idempotency_keys ORDER BY created_at DESC, key OFFSET $1)',
  // Moved forward only: a chosen id it passes is never handed out, so a deleted one never comes back.
  passChosen: `SELECT setval('plants_id_seq', passed.id)
               FROM (SELECT id FROM chosen_ids ORDER BY id DESC OFFSET $1 LIMIT 1) AS passed
               WHERE passed.id > ${DRAWN}`,
  forgetChosen: `DELETE FROM chosen_ids WHERE id <= ${DRAWN}`,
  deliveries: 'DELETE FROM webhook_deliveries WHERE id IN ' +
    '(SELECT id FROM webhook_deliveries ORDER BY id DESC OFFSET $1)',
  events: 'DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events ORDER BY id DESC OFFSET $1)'
}

/** Deletes the oldest rows past `limits` in one transaction (see src/store/sqlite/trim.ts). */
export function postgresTrim (pool: pg.Pool): (limits: StorageLimits) => Promise<void> {
  return async (limits) => {
    await inTransaction(pool, async (client) => {
      await client.query(SQL.keys, [limits.keys])
      await client.query(SQL.passChosen, [limits.chosenIds])
      await client.query(SQL.forgetChosen)
      await client.query(SQL.deliveries, [limits.deliveries])
      await client.query(SQL.events, [limits.events])
    })
  }
}
