import pg from 'pg'
import { StoreOpenError } from '../../lib/errors.js'
import { parsePostgresUrl, postgresName } from './connection.js'

/** What a server says it is: its cluster (pg_control_system's identifier) and the database a session is in. */
const IDENTITY = 'SELECT (SELECT system_identifier::text FROM pg_control_system()) AS cluster, ' +
  'current_database() AS database'

interface Identity { cluster: string, database: string }

async function identityOf (connection: pg.ClientConfig): Promise<Identity> {
  const client = new pg.Client(connection)
  client.on('error', () => {})
  try {
    await client.connect()
    const { rows: [row] } = await client.query<Identity>(IDENTITY)
    if (row === undefined) throw new Error('the server did not say which database it is')
    return row
  } finally {
    await client.end().catch(() => {})
  }
}

/** DATABASE_DIRECT_URL must reach DATABASE_URL's database: a pooler's host is not the server's, so ask the server. */
export async function assertSameDatabase (connection: pg.ClientConfig, url: string, directUrl: string): Promise<void> {
  const problem = (what: string): StoreOpenError => new StoreOpenError(
    `DATABASE_DIRECT_URL (${postgresName(directUrl)}) ${what} than DATABASE_URL (${postgresName(url)}): ` +
    'both must reach the same database')
  const { schema, connectionString } = parsePostgresUrl(directUrl)
  if (schema !== undefined && schema !== parsePostgresUrl(url).schema) throw problem('names another schema')
  const [pooled, direct] = await Promise.all([identityOf(connection), identityOf({ ...connection, connectionString })])
  if (pooled.cluster !== direct.cluster) throw problem('reaches another PostgreSQL server')
  if (pooled.database !== direct.database) {
    throw problem(`reaches another database (${direct.database}, not ${pooled.database})`)
  }
}
