import Database from 'better-sqlite3'
import { isPostgresUrl } from '../../src/store/postgres/connection.js'
import { adminQuery } from './postgres.js'

/**
 * Sets the last id the server assigned itself in the database `databaseUrl` names (a SQLite file,
 * or a PostgreSQL URL with `?schema=`), from a connection beside the store's: as if the server had
 * handed out every id up to `last`. Tests reach the top of the id range this way in a moment.
 */
export async function setIdSequence (databaseUrl: string, last: bigint): Promise<void> {
  if (isPostgresUrl(databaseUrl)) {
    const schema = new URL(databaseUrl).searchParams.get('schema')
    await adminQuery('SELECT setval($1::regclass, $2)', [`${schema ?? 'public'}.plants_id_seq`, last])
    return
  }
  const db = new Database(databaseUrl)
  try {
    db.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = 'plants'").run(last)
  } finally {
    db.close()
  }
}
