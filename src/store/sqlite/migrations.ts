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
   CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);`,
  // 3: webhooks. A subscription belongs to the token that created it (owner: its SHA-256, hex);
  // events are space-separated names. A delivery is the outbox row of one event for one subscription,
  // written in the plant change's transaction, with its own copy of the signed body; `lease` names
  // the dispatcher attempting it until `lease_until`. AUTOINCREMENT: ids are never handed out twice;
  // and they stay within 2^53 - 1, so that JSON carries them exactly.
  `CREATE TABLE webhook_subscriptions (
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
   CREATE INDEX webhook_deliveries_due ON webhook_deliveries (subscription_id, next_attempt_at) WHERE status = 'pending';
   CREATE INDEX webhook_deliveries_subscription_id ON webhook_deliveries (subscription_id, id);
   CREATE INDEX webhook_deliveries_created_at ON webhook_deliveries (created_at);`
]

/** Marks a file as a plant-store database ('PLNT'), so a foreign SQLite file is never migrated. */
export const APPLICATION_ID = 0x504c4e54
