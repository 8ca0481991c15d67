import type Database from 'better-sqlite3'
import type { MigrationStep } from '../migration.js'
import { MAX_PRINCIPAL_ID_BYTES, jwtPrincipalId } from '../../auth/principal-id.js'
import { plantJson } from '../../resources/plants.js'
import { eventPayload, type WebhookEventType } from '../../webhooks/events.js'

/** SQL, or for a step SQL cannot say exactly, a function run in the migration's transaction. */
type Migration = string | ((db: Database.Database) => void)

/** 10: an event row holds its subject and payload, made by the code that made it at fan-out: the same bytes. */
function outboxRowsHoldTheirPayload (db: Database.Database): void {
  db.exec(`ALTER TABLE webhook_events ADD COLUMN subject_type TEXT;
           ALTER TABLE webhook_events ADD COLUMN subject_id INTEGER;
           ALTER TABLE webhook_events ADD COLUMN payload TEXT NOT NULL DEFAULT ''`)
  const fill = db.prepare<[string, bigint], unknown>(
    "UPDATE webhook_events SET subject_type = 'plant', subject_id = plant_id, payload = ? WHERE id = ?")
  const rows = db.prepare<[], {
    id: bigint,
    event_type: string,
    plant_id: bigint,
    name: string,
    tag: string | null,
    plant_created_at: string,
    plant_updated_at: string,
    occurred_at: bigint
  }>(
    'SELECT id, event_type, plant_id, name, tag, plant_created_at, plant_updated_at, occurred_at ' +
    'FROM webhook_events').safeIntegers(true)
  for (const row of rows.all()) {
    const { plant_id: id, name, tag, plant_created_at: createdAt, plant_updated_at: updatedAt } = row
    const plant = { id, name, ...(tag !== null && { tag }), createdAt, updatedAt }
    fill.run(eventPayload(row.event_type as WebhookEventType, plantJson(plant), Number(row.occurred_at)), row.id)
  }
  for (const column of ['plant_id', 'name', 'tag', 'plant_created_at', 'plant_updated_at', 'occurred_at']) {
    db.exec(`ALTER TABLE webhook_events DROP COLUMN ${column}`)
  }
}

/** 11: a JWT principal id past MAX_PRINCIPAL_ID_BYTES becomes its digest (jwtPrincipalId), to fit an index row. */
function longPrincipalIdsAreDigests (db: Database.Database): void {
  for (const [table, column] of [['webhook_subscriptions', 'owner'], ['idempotency_keys', 'scope']] as const) {
    const long = db.prepare<[number], string>(
      `SELECT DISTINCT ${column} FROM ${table} ` +
        `WHERE substr(${column}, 1, 4) = 'jwt:' AND length(CAST(${column} AS BLOB)) > ?`).pluck()
    const rewrite = db.prepare<[string, string], unknown>(`UPDATE ${table} SET ${column} = ? WHERE ${column} = ?`)
    for (const id of long.all(MAX_PRINCIPAL_ID_BYTES)) rewrite.run(jwtPrincipalId(id.slice('jwt:'.length)), id)
  }
}

/** Append only: a released step is never edited, a change is a new step. */
export const migrations: ReadonlyArray<MigrationStep<Migration>> = [
  // 1: AUTOINCREMENT so a deleted id is never handed out again (caches and ETags stay honest).
  {
    name: 'plants',
    up: `CREATE TABLE plants (
     id         INTEGER PRIMARY KEY AUTOINCREMENT,
     name       TEXT    NOT NULL,
     tag        TEXT,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL
   ) STRICT;
   CREATE INDEX plants_tag_id ON plants (tag, id);`
  },
  // 2: a replay returns exactly the plant as first answered.
  {
    name: 'idempotency keys',
    expand: true,
    up: `CREATE TABLE idempotency_keys (
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
  },
  // 3: webhooks. Owner: the creating token's SHA-256. Ids stay within 2^53 - 1, so JSON carries them exactly.
  {
    name: 'webhook subscriptions and deliveries',
    expand: true,
    up: `CREATE TABLE webhook_subscriptions (
     id                    INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id <= 9007199254740991),
     owner                 TEXT    NOT NULL,
     url                   TEXT    NOT NULL,
     events                TEXT    NOT NULL,
     description           TEXT,
     disabled              INTEGER NOT NULL CHECK (disabled IN (0, 1)),
     secret                TEXT    NOT NULL,
     previous_secret       TEXT,
     previous_secret_until INTEGER,
     failing_since         INTEGER,
     created_at            INTEGER NOT NULL,
     updated_at            INTEGER NOT NULL
   ) STRICT;
   CREATE INDEX webhook_subscriptions_owner_id ON webhook_subscriptions (owner, id);
   CREATE TABLE webhook_deliveries (
     id               INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id <= 9007199254740991),
     subscription_id  INTEGER NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
     message_id       TEXT    NOT NULL,
     event_type       TEXT    NOT NULL,
     payload          TEXT    NOT NULL,
     status           TEXT    NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
     attempts         INTEGER NOT NULL,
     next_attempt_at  INTEGER,
     lease            TEXT,
     lease_until      INTEGER,
     last_attempt_at  INTEGER,
     last_status_code INTEGER,
     last_error       TEXT,
     created_at       INTEGER NOT NULL
   ) STRICT;
   CREATE INDEX webhook_deliveries_due ON webhook_deliveries (subscription_id, next_attempt_at)
     WHERE status = 'pending';
   CREATE INDEX webhook_deliveries_subscription_id ON webhook_deliveries (subscription_id, id);
   CREATE INDEX webhook_deliveries_created_at ON webhook_deliveries (created_at);`
  },
  // 4: server-assigned ids within 1..2^53 - 1, resuming below the run of known ids that reaches the top.
  {
    name: 'server-assigned ids within 2^53 - 1',
    up: `INSERT INTO sqlite_sequence (name, seq)
     SELECT 'plants', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'plants');
   WITH known (id) AS (
          SELECT id FROM plants WHERE id BETWEEN 1 AND 9007199254740991
          UNION SELECT plant_id FROM idempotency_keys WHERE plant_id BETWEEN 1 AND 9007199254740991)
   UPDATE sqlite_sequence SET seq = (
            SELECT coalesce(max(id), 0) FROM known
            WHERE id < 9007199254740991 AND id + 1 NOT IN (SELECT id FROM known))
   WHERE name = 'plants' AND seq > 9007199254740991;
   CREATE TABLE chosen_ids (id INTEGER PRIMARY KEY) STRICT;`
  },
  // 5: where a probe write goes while writes fail (a full disk).
  {
    name: 'a probe write for a full disk',
    expand: true,
    up: 'CREATE TABLE write_probe (id INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT;'
  },
  // 6: where an event came from (request id, traceparent), for delivery logs and spans.
  {
    name: 'where an event came from',
    expand: true,
    up: `ALTER TABLE webhook_deliveries ADD COLUMN request_id TEXT;
   ALTER TABLE webhook_deliveries ADD COLUMN traceparent TEXT;`
  },
  // 7: the outbox (docs/performance.md#what-the-measurements-decided). AUTOINCREMENT: event ids only grow.
  {
    name: 'the event outbox',
    expand: true,
    up: `CREATE TABLE webhook_events (
     id               INTEGER PRIMARY KEY AUTOINCREMENT,
     message_id       TEXT    NOT NULL,
     event_type       TEXT    NOT NULL,
     plant_id         INTEGER NOT NULL,
     name             TEXT    NOT NULL,
     tag              TEXT,
     plant_created_at TEXT    NOT NULL,
     plant_updated_at TEXT    NOT NULL,
     occurred_at      INTEGER NOT NULL,
     created_at       INTEGER NOT NULL,
     request_id       TEXT,
     traceparent      TEXT
   ) STRICT;
   ALTER TABLE webhook_subscriptions ADD COLUMN first_event_id INTEGER NOT NULL DEFAULT 0;`
  },
  // 8: every replaced secret signs until its expiry ([secret, until] pairs, newest first); old columns stay.
  {
    name: 'every rotated secret keeps signing',
    expand: true,
    up: `ALTER TABLE webhook_subscriptions ADD COLUMN previous_secrets TEXT NOT NULL DEFAULT '[]';
   UPDATE webhook_subscriptions SET previous_secrets = json_array(json_array(previous_secret, previous_secret_until))
   WHERE previous_secret IS NOT NULL AND previous_secret_until IS NOT NULL;`
  },
  // 9: every attempt of a delivery; the trigger covers connections without foreign_keys=ON.
  {
    name: 'every attempt of a delivery',
    expand: true,
    up: `CREATE TABLE webhook_attempts (
     id            INTEGER PRIMARY KEY,
     delivery_id   INTEGER NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
     at            INTEGER NOT NULL,
     duration_ms   INTEGER NOT NULL,
     status_code   INTEGER,
     error         TEXT,
     response_body TEXT
   ) STRICT;
   CREATE INDEX webhook_attempts_delivery_id ON webhook_attempts (delivery_id, id);
   CREATE TRIGGER webhook_attempts_cascade AFTER DELETE ON webhook_deliveries
   BEGIN DELETE FROM webhook_attempts WHERE delivery_id = old.id; END;`
  },
  { name: 'event rows hold their payload', up: outboxRowsHoldTheirPayload },
  { name: 'long JWT principal ids are digests', up: longPrincipalIdsAreDigests },
  // 12: keys and chosen ids by collection; a key keeps its row's values as JSON (src/store/row-values.ts).
  {
    name: 'idempotency keys and chosen ids of every resource',
    up: `ALTER TABLE idempotency_keys RENAME TO idempotency_keys_11;
   CREATE TABLE idempotency_keys (
     resource    TEXT    NOT NULL,
     scope       TEXT    NOT NULL,
     key         TEXT    NOT NULL,
     fingerprint TEXT    NOT NULL,
     id          INTEGER NOT NULL,
     row_values  TEXT    NOT NULL,
     created_at  INTEGER NOT NULL,
     updated_at  INTEGER NOT NULL,
     PRIMARY KEY (resource, scope, key)
   ) STRICT, WITHOUT ROWID;
   INSERT INTO idempotency_keys
     SELECT 'plants', scope, key, fingerprint, plant_id, json_object('name', name, 'tag', tag), created_at, updated_at
     FROM idempotency_keys_11;
   DROP TABLE idempotency_keys_11;
   CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
   CREATE TABLE chosen_ids_12 (
     resource TEXT    NOT NULL,
     id       INTEGER NOT NULL,
     PRIMARY KEY (resource, id)
   ) STRICT, WITHOUT ROWID;
   INSERT INTO chosen_ids_12 SELECT 'plants', id FROM chosen_ids;
   DROP TABLE chosen_ids;
   ALTER TABLE chosen_ids_12 RENAME TO chosen_ids;`
  }
]

export function applyMigration (
  db: Database.Database, step: number, steps: ReadonlyArray<MigrationStep<Migration>> = migrations
): void {
  const migration = steps[step]?.up
  if (typeof migration === 'function') migration(db)
  else if (migration !== undefined) db.exec(migration)
}

/** 'PLNT', so a foreign SQLite file is never migrated. */
export const APPLICATION_ID = 0x504c4e54
