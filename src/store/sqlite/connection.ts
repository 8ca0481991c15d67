import type Database from 'better-sqlite3'

/** The settings of every connection plant-store opens to its SQLite file (the plant store's, the webhook store's). */
export function configureConnection (db: Database.Database): Database.Database {
  // Ids are int64: read every INTEGER as a bigint so nothing is rounded on the way back.
  db.defaultSafeIntegers(true)
  db.pragma('journal_mode = WAL')
  // NORMAL: WAL appends without an fsync each, still consistent after a crash. For `full`, the
  // group commit adds one fdatasync of the WAL per group before anything is answered.
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
  // Sorts and IN lists (the dispatcher's claim) build temporary B-trees; in a temporary file by
  // default, which cost the claim about 70 µs of file set-up per run. They are a few rows each.
  db.pragma('temp_store = MEMORY')
  return db
}
