/**
 * The SQLite schema, one numbered step each; `PRAGMA user_version` records how many have run.
 * Append only: a released step is never edited, a change is a new step.
 */
export const migrations: readonly string[] = [
  // 1: plants. AUTOINCREMENT so a deleted id is never handed out again (caches and ETags stay honest).
  `CREATE TABLE plants (
     id         INTEGER PRIMARY KEY AUTOINCREMENT,
     name       TEXT    NOT NULL,
     tag        TEXT,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL
   ) STRICT;
   CREATE INDEX plants_tag_id ON plants (tag, id);`,
  // 2: idempotency keys of creates, with the plant as first answered (a replay returns exactly that).
  `CREATE TABLE idempotency_keys (
     scope       TEXT    NOT NULL,
     key         TEXT    NOT NULL,
     fingerprint TEXT    NOT NULL,
     plant_id    INTEGER NOT NULL,
     name        TEXT    NOT NULL,
     tag         TEXT,
     created_at  INTEGER NOT NULL,
     updated_at  INTEGER NOT NULL,
     PRIMARY KEY (scope, key)
   ) STRICT, WITHOUT ROWID;
   CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);`
]

/** Marks a file as a plant-store database ('PLNT'), so a foreign SQLite file is never migrated. */
export const APPLICATION_ID = 0x504c4e54
