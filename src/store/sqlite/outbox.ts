import type Database from 'better-sqlite3'
import { buildEventMessage, type ResourceEvent } from '../../webhooks/events.js'

type EventValues = [string, string, string, bigint, string, number, string | null, string | null]

const INSERT_EVENT_SQL = `
  INSERT INTO webhook_events
    (message_id, event_type, subject_type, subject_id, payload, created_at, request_id, traceparent)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

const insertStatements = new WeakMap<Database.Database, Database.Statement<EventValues>>()

/** Writes the event to the outbox in the caller's transaction (the change and its event commit together); its id. */
export function enqueueSqliteEvent (db: Database.Database, event: ResourceEvent, now: number = Date.now()): bigint {
  let statement = insertStatements.get(db)
  if (statement === undefined) {
    statement = db.prepare<EventValues>(INSERT_EVENT_SQL)
    insertStatements.set(db, statement)
  }
  const { messageId, type, subject, payload, requestId, traceparent } = buildEventMessage(event, now)
  return statement.run(messageId, type, subject.resource, subject.id, payload, now, requestId, traceparent)
    .lastInsertRowid as bigint
}

export interface SqliteOutbox {
  /** In the write's own transaction: the event commits and rolls back with the change. */
  emit: (event: ResourceEvent, now: number) => void
  /** Subscriptions changed, or a batch rolled back what was read of them. */
  forget: () => void
  /** Whether events were written since the last call: the dispatchers are woken after the commit. */
  takeWritten: () => boolean
}

/** Skips events no enabled subscription asked for; what they ask is re-read after any change (data_version). */
export function createSqliteOutbox (db: Database.Database): SqliteOutbox {
  const enabledEvents = db.prepare<[], string>(
    'SELECT DISTINCT events FROM webhook_subscriptions WHERE disabled = 0').pluck()
  const dataVersion = db.prepare<[], bigint>('PRAGMA data_version').pluck()
  let wanted: Set<string> | undefined
  let wantedVersion: bigint | undefined
  let written = false
  return {
    emit (event, now) {
      const version = dataVersion.get() as bigint
      if (wanted === undefined || version !== wantedVersion) {
        wanted = new Set(enabledEvents.all().flatMap((events) => events.split(' ')))
        wantedVersion = version
      }
      if (!wanted.has(event.type)) return
      enqueueSqliteEvent(db, event, now)
      written = true
    },
    forget () { wanted = undefined },
    takeWritten () {
      const was = written
      written = false
      return was
    }
  }
}
