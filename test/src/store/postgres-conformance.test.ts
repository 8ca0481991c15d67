import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { adminQuery, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { setIdSequence } from '../../helpers/id-sequence.js'
import { storeConformance } from './conformance.js'

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
}
