import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { storeConformance } from './conformance.js'

// CI sets TEST_DATABASE_URL (see .ci/run); without it there is no PostgreSQL to run against.
if (TEST_DATABASE_URL !== undefined) {
  storeConformance('PostgreSQL', async (t) => {
    const { url } = scratchDatabaseUrl(t)
    return async () => {
      const store = await createPostgresStore({ url, poolMax: 4 })
      t.after(() => store.close())
      return store
    }
  })
}
