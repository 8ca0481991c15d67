import type pg from 'pg'
import type { StorageLimits } from '../trim.js'
import { inTransaction, tablePrefix } from './connection.js'

type Statement = 'keys' | 'passChosen' | 'forgetChosen' | 'deliveries' | 'events'

/** The statements on `schema`'s tables, each schema-qualified. */
function statements (schema: string | undefined): Record<Statement, string> {
  const t = tablePrefix(schema)
  /** The last id the sequence handed out (none yet: one below its start). */
  const drawn = `(SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM ${t}plants_id_seq)`
  return {
    keys: `DELETE FROM ${t}idempotency_keys WHERE (scope, key) IN ` +
      `(SELECT scope, key FROM ${t}idempotency_keys ORDER BY created_at DESC, key OFFSET $1)`,
    // Moved forward only: a chosen id it passes is never handed out, so a deleted one never comes back.
    passChosen: `SELECT setval('${t}plants_id_seq', passed.id)
                 FROM (SELECT id FROM ${t}chosen_ids ORDER BY id DESC OFFSET $1 LIMIT 1) AS passed
                 WHERE passed.id > ${drawn}`,
    forgetChosen: `DELETE FROM ${t}chosen_ids WHERE id <= ${drawn}`,
    deliveries: `DELETE FROM ${t}webhook_deliveries WHERE id IN ` +
      `(SELECT id FROM ${t}webhook_deliveries ORDER BY id DESC OFFSET $1)`,
    events: `DELETE FROM ${t}webhook_events WHERE id IN (SELECT id FROM ${t}webhook_events ORDER BY id DESC OFFSET $1)`
  }
}

/** Deletes the oldest rows past `limits` in one transaction (see src/store/sqlite/trim.ts). */
export function postgresTrim (pool: pg.Pool, schema: string | undefined): (limits: StorageLimits) => Promise<void> {
  const sql = statements(schema)
  return async (limits) => {
    await inTransaction(pool, async (client) => {
      await client.query(sql.keys, [limits.keys])
      await client.query(sql.passChosen, [limits.chosenIds])
      await client.query(sql.forgetChosen)
      await client.query(sql.deliveries, [limits.deliveries])
      await client.query(sql.events, [limits.events])
    })
  }
}
