import type { Cleanup } from './cleanup.js'
import { scratchDatabaseUrl, TEST_DATABASE_URL } from './postgres.js'

/** A kind of database the API tests run on: SQLite always, PostgreSQL when TEST_DATABASE_URL is set. */
export interface ApiTestDatabase {
  name: string
  /** The environment for buildTestApp: a fresh, empty database dropped when the test ends. */
  env: (t: Cleanup) => NodeJS.ProcessEnv
}

export const apiTestDatabases: readonly ApiTestDatabase[] = [
  { name: 'SQLite', env: () => ({ DATABASE_URL: ':memory:' }) },
  ...(TEST_DATABASE_URL === undefined
    ? []
    : [{ name: 'PostgreSQL', env: (t: Cleanup) => ({ DATABASE_URL: scratchDatabaseUrl(t).url, PG_POOL_MAX: '4' }) }])
]
