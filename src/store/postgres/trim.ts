import type pg from 'pg'
import type { StorageLimits } from '../trim.js'
import { inTransaction, tablePrefix } from './connection.js'
import type { StoredResource } from '../../resources/definition.js'
import { chosenTrimSql } from './table-sql.js'

/** Deletes the oldest rows past `limits` in one transaction (see src/store/sqlite/trim.ts). */
export function postgresTrim (
  pool: pg.Pool, schema: string | undefined, resources: readonly StoredResource[]
): (limits: StorageLimits) => Promise<void> {
  const t = tablePrefix(schema)
  const keys = `DELETE FROM ${t}idempotency_keys WHERE (resource, scope, key) IN ` +
    `(SELECT resource, scope, key FROM ${t}idempotency_keys ORDER BY created_at DESC, key OFFSET $1)`
  const chosen = resources.map((resource) => chosenTrimSql(resource, schema))
  const oldest = (table: string): string =>
    `DELETE FROM ${t}${table} WHERE id IN (SELECT id FROM ${t}${table} ORDER BY id DESC OFFSET $1)`
  const [deliveries, events] = [oldest('webhook_deliveries'), oldest('webhook_events')]
  return async (limits) => {
    await inTransaction(pool, async (client) => {
      await client.query(keys, [limits.keys])
      for (const { pass, forget } of chosen) {
        await client.query(pass, [limits.chosenIds])
        await client.query(forget)
      }
      await client.query(deliveries, [limits.deliveries])
      await client.query(events, [limits.events])
    })
  }
}
