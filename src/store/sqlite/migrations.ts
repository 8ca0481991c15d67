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
   CREATE INDEX webhook_deliveries_created_at ON webhook_deliveries (created_at);`,
  // 4: server-assigned ids of their own, within 1..2^53 - 1 (MAX_ASSIGNED_ID in store.ts). AUTOINCREMENT
  // followed every chosen id up, past 2^53 after a client chose 2^53 - 1. Now the store names every id
  // itself and keeps the last one it assigned as sqlite_sequence's `seq` for plants (the row SQLite
  // writes with every insert anyway, so this costs no page more), putting it back after an insert
  // of a chosen id moved it. `chosen_ids` keeps the ids clients chose above it, so one that was
  // deleted is skipped like one that exists.
  // The sequence goes on after the last id AUTOINCREMENT handed out or saw, so no id that ever existed
  // comes back. When that was already past 2^53 - 1 (a client chose 2^53 - 1 and the server went on
  // above it), it goes on after the largest known id (plants, remembered idempotent creates) below the
  // run of known ids that reaches 2^53 - 1 (the ids chosen at the top): the end of the last run that
  // does not reach it. Ids deleted before this migration above that one are forgotten.
  `INSERT INTO sqlite_sequence (name, seq) SELECT 'plants', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'plants');
   WITH known (id) AS (
          SELECT id FROM plants WHERE id BETWEEN 1 AND 9007199254740991
          UNION SELECT plant_id FROM idempotency_keys WHERE plant_id BETWEEN 1 AND 9007199254740991)
   UPDATE sqlite_sequence SET seq = (
            SELECT coalesce(max(id), 0) FROM known
            WHERE id < 9007199254740991 AND id + 1 NOT IN (SELECT id FROM known))
   WHERE name = 'plants' AND seq > 9007199254740991;
   CREATE TABLE chosen_ids (id INTEGER PRIMARY KEY) STRICT;`,
  // 5: where a probe write goes while writes fail (a full disk): one row, written then deleted.
  'CREATE TABLE write_probe (id INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT;',
  // 6: where an event came from: the request id of the write that caused it (delivery logs carry it)
  // and, with tracing on, the W3C traceparent of its request span (the delivery's span is its child).
  `ALTER TABLE webhook_deliveries ADD COLUMN request_id TEXT;
   ALTER TABLE webhook_deliveries ADD COLUMN traceparent TEXT;`,
  // 7: the outbox proper. A plant write records its event in one small row, with the plant's fields
  // as they were and no index beside its key: the cheapest durable write (a delivery row, with its
  // body and three indexes, cost a create more than twice as much). The dispatcher turns events
  // into deliveries, one per subscription that asked for the type, off the request path, and
  // deletes them in the same transaction. AUTOINCREMENT: event ids only grow, so a subscription
  // receives exactly the events from `first_event_id` on (those committed after it was created).
  `CREATE TABLE webhook_events (
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
   ALTER TABLE webhook_subscriptions ADD COLUMN first_event_id INTEGER NOT NULL DEFAULT 0;`,
  // 8: every secret a rotation replaced keeps signing until its own expiry: a JSON array of
  // [secret, until] pairs, newest first. previous_secret(_until) stay for instances not yet upgraded.
  `ALTER TABLE webhook_subscriptions ADD COLUMN previous_secrets TEXT NOT NULL DEFAULT '[]';
   UPDATE webhook_subscriptions SET previous_secrets = json_array(json_array(previous_secret, previous_secret_until))
   WHERE previous_secret IS NOT NULL AND previous_secret_until IS NOT NULL;`,
  // 9: every attempt of a delivery, for its owner to inspect; gone with the delivery (the trigger
  // covers connections without foreign_keys=ON, as deleteSubscription does by hand).
  `CREATE TABLE webhook_attempts (
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
]

/** Marks a file as a plant-store database ('PLNT'), so a foreign SQLite file is never migrated. */
export const APPLICATION_ID = 0x504c4e54
