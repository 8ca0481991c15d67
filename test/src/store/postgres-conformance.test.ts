import pg from 'pg'
import { parsePostgresUrl } from '../../../src/store/postgres/connection.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { postgresEnqueuer } from '../../../src/store/postgres/webhook-store.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { setIdSequence } from '../../helpers/id-sequence.js'
import { webhookStoreConformance } from '../webhooks/store-conformance.js'
import { storeConformance } from './conformance.js'
import { PLANTS_UNDER_TEST, resourceConformance } from './resource-conformance.js'

// CI sets TEST_DATABASE_URL (see .ci/run); without it there is no PostgreSQL to run against.
if (TEST_DATABASE_URL !== undefined) {
  storeConformance('PostgreSQL', async (t) => {
    const { url, schema } = scratchDatabaseUrl(t)
    return {
      open: async () => {
        const store = await createPostgresStore({ url, poolMax: 4 })
        t.after(() => store.close())
        return store
      },
      ageIdempotencyKeys: async (ms) => {
        await adminQuery(`UPDATE ${schema}.idempotency_keys SET created_at = created_at - $1`, [ms])
      },
      setIdSequence: async (last) => { await setIdSequence(url, last) }
    }
  })

  resourceConformance('PostgreSQL', PLANTS_UNDER_TEST, async (t) => {
    const { url } = scratchDatabaseUrl(t)
    return {
      open: async () => {
        const store = await createPostgresStore({ url, poolMax: 4 })
        t.after(() => store.close())
        return { repository: store.plants, webhooks: store.webhooks, close: store.close }
      }
    }
  })

  // The webhooks repository of the same store; several stores on one schema stand for several instances.
  webhookStoreConformance('PostgreSQL', async (t) => {
    const cleanup = cleanupStack(t)
    const { url, schema } = scratchDatabaseUrl(cleanup)
    return {
      open: async () => {
        const store = await createPostgresStore({ url, poolMax: 2 })
        cleanup.after(() => store.close())
        return store.webhooks
      },
      enqueueInTransaction: async (event, now, commit) => {
        const client = new pg.Client({ connectionString: parsePostgresUrl(url).connectionString })
        await client.connect()
        try {
          await client.query(`BEGIN; SELECT set_config('search_path', '${schema}', true)`)
          const count = await postgresEnqueuer(schema)(client, event, now, true)
          await client.query(commit ? 'COMMIT' : 'ROLLBACK')
          return count
        } finally {
          await client.end()
        }
      }
    }
  })
}
