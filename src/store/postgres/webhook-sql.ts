import { buildEventMessage, type ResourceEvent } from '../../webhooks/events.js'
import { fanOutSql, receives as sharedReceives } from '../webhook-store.js'
import { tablePrefix } from './connection.js'

/** The NOTIFY channel; the payload is the writer's schema, so schemas sharing a database tell their events apart. */
export const WEBHOOK_CHANNEL = 'plant_store_webhooks'

/** The outbox write as CTEs; the event's row is written only when some enabled subscription asked for its type. */
const eventCtes = (t: string, p: number, from: string): string => `
  receivers AS (
    SELECT count(*)::integer AS n FROM ${t}webhook_subscriptions WHERE NOT disabled AND $${p + 1} = ANY (events)),
  inserted AS (
    INSERT INTO ${t}webhook_events
      (message_id, event_type, subject_type, subject_id, payload, created_at, request_id, traceparent)
    SELECT $${p}, $${p + 1}, $${p + 8}, $${p + 6}::bigint, $${p + 2}, $${p + 3}, $${p + 4}, $${p + 5}
    FROM ${from} WHERE n > 0)`

/** The payload is the schema's name as the listener knows it (see `listener`). */
const notifyColumn = (schema: string | undefined, n: number): string =>
  `CASE WHEN n > 0 AND $${n}::boolean
    THEN pg_notify('${WEBHOOK_CHANNEL}', ${schema === undefined ? 'current_schema()' : `'${schema}'`}) END AS notified`

/** A write and its event in one statement, atomic without a transaction; postgresEventMessageValues from $p. */
export const writeWithEventSql = (schema: string | undefined, write: string, columns: string, p: number): string =>
  `WITH written AS (${write}),
  ${eventCtes(tablePrefix(schema), p, 'written, receivers')}
  SELECT ${columns}, n AS deliveries, ${notifyColumn(schema, p + 7)} FROM written, receivers`

export const receives = (eventId: string, type: string): string =>
  sharedReceives(eventId, `${type} = ANY (s.events)`, 'NOT s.disabled')

export const postgresWebhookSql = (schema: string | undefined, t: string = tablePrefix(schema)) => ({
  schemaVersion: `SELECT max(version) AS version FROM ${t}plant_store_migrations`,
  enqueue: `WITH ${eventCtes(t, 1, 'receivers')}
  SELECT n AS deliveries, ${notifyColumn(schema, 8)} FROM receivers`,
  // SKIP LOCKED: two instances never take the same event.
  fanOut: `WITH taken AS (
             DELETE FROM ${t}webhook_events WHERE id IN (
               SELECT id FROM ${t}webhook_events ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
             RETURNING id, message_id, event_type, payload, created_at, request_id, traceparent),
           made AS (${fanOutSql(t, receives, 'taken e')} ORDER BY e.id, s.id)
           SELECT count(*)::integer AS events FROM taken`,
  // Per subscription its oldest due deliveries, round robin between owners, then an owner's subscriptions.
  claim: `WITH candidates AS (
            SELECT d.id, d.next_attempt_at, s.owner,
                   row_number() OVER (PARTITION BY s.id ORDER BY d.next_attempt_at, d.id) AS rs
            FROM ${t}webhook_subscriptions s
            CROSS JOIN LATERAL (
              SELECT x.id, x.next_attempt_at FROM ${t}webhook_deliveries x
              WHERE x.subscription_id = s.id AND x.status = 'pending' AND x.next_attempt_at <= $2
                AND (x.lease_until IS NULL OR x.lease_until <= $2)
              ORDER BY x.next_attempt_at, x.id LIMIT $5
              FOR UPDATE SKIP LOCKED) d
            WHERE NOT s.disabled AND s.id <> ALL ($6::bigint[]) AND s.owner <> ALL ($7::text[])),
          ranked AS (
            SELECT id, next_attempt_at, row_number() OVER (PARTITION BY owner ORDER BY rs, next_attempt_at, id) AS ro
            FROM candidates),
          due AS (SELECT id FROM ranked ORDER BY ro, next_attempt_at, id LIMIT $4)
          UPDATE ${t}webhook_deliveries w SET lease = $1, lease_until = $3
          FROM due, ${t}webhook_subscriptions s
          WHERE w.id = due.id AND s.id = w.subscription_id
          RETURNING w.id, w.subscription_id, s.owner, w.message_id, w.event_type, w.payload, w.attempts,
                    s.url, s.secret, s.previous_secrets, w.request_id, w.traceparent`,
  // Many successes in one round trip; a completion whose lease is gone matches no row and writes nothing.
  succeedMany: `WITH input AS (
                  SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::integer[], $5::integer[], $6::text[])
                    AS i (id, lease, at, code, duration, body)),
                done AS (
                  UPDATE ${t}webhook_deliveries d
                  SET status = 'succeeded', attempts = attempts + 1, next_attempt_at = NULL, lease = NULL,
                    lease_until = NULL, last_attempt_at = i.at, last_status_code = i.code, last_error = NULL
                  FROM input i WHERE d.id = i.id AND d.lease = i.lease RETURNING d.id, d.subscription_id),
                healthy AS (
                  UPDATE ${t}webhook_subscriptions s SET failing_since = NULL
                  WHERE s.id IN (SELECT subscription_id FROM done) AND s.failing_since IS NOT NULL),
                logged AS (
                  INSERT INTO ${t}webhook_attempts (delivery_id, at, duration_ms, status_code, response_body)
                  SELECT i.id, i.at, i.duration, i.code, i.body FROM input i JOIN done ON done.id = i.id ORDER BY i.id)
                SELECT id FROM done`,
  renew: `UPDATE ${t}webhook_deliveries w SET lease_until = $3
          FROM unnest($1::bigint[], $2::text[]) AS r (id, lease)
          WHERE w.id = r.id AND w.lease = r.lease`,
  release: `UPDATE ${t}webhook_deliveries SET lease = NULL, lease_until = NULL
            WHERE lease = $1 AND id = ANY ($2::bigint[])`
} as const)

/** Also `writeWithEventSql`'s event. */
export function postgresEventMessageValues (event: ResourceEvent, now: number, notify: boolean): unknown[] {
  const { messageId, type, subject, payload, requestId, traceparent } = buildEventMessage(event, now)
  return [messageId, type, payload, now, requestId, traceparent, String(subject.id), notify, subject.resource]
}
