import pg from 'pg'
import { parsePostgresUrl } from '../../../src/store/postgres/connection.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { createPostgresWebhookStore, enqueuePostgresEvent } from '../../../src/store/postgres/webhook-store.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { webhookStoreConformance } from './store-conformance.js'

// CI sets TEST_DATABASE_URL (see .ci/run); without it there is no PostgreSQL to run against.
if (TEST_DATABASE_URL !== undefined) {
  webhookStoreConformance('PostgreSQL', async (t) => {
    const cleanup = cleanupStack(t)
    const { url } = scratchDatabaseUrl(cleanup)
    // The plant store migrates the schema (webhook tables included), as it does in the service.
    const plants = await createPostgresStore({ url, poolMax: 1 })
    cleanup.after(() => plants.close())
    return {
      open: async () => {
        const store = await createPostgresWebhookStore({ url, poolMax: 2 })
        cleanup.after(() => store.close())
        return store
      },
      enqueueInTransaction: async (event, now, commit) => {
        const client = new pg.Client({ connectionString: parsePostgresUrl(url).connectionString })
        await client.connect()
        try {
          await client.query('BEGIN')
          const count = await enqueuePostgresEvent(client, event, now)
          await client.query(commit ? 'COMMIT' : 'ROLLBACK')
          return count
        } finally {
          await client.end()
        }
      }
    }
  })
}
