import type Database from 'better-sqlite3'
import { idsExhausted, idTaken } from '../../lib/errors.js'
import { MAX_ASSIGNED_ID } from '../contract.js'

interface Sequence { table: string, resource: string }

function statementsFor (db: Database.Database, { table }: Sequence) {
  const free = (id: string): string =>
    `NOT EXISTS (SELECT 1 FROM ${table} WHERE id = ${id}) ` +
    `AND NOT EXISTS (SELECT 1 FROM chosen_ids WHERE resource = @resource AND id = ${id})`
  return {
    // The id assigned next: the one after the last, or the first free one after the run of taken ids.
    nextId: db.prepare<[{ resource: string }], { last: bigint, next: bigint }>(`
      SELECT seq AS last, CASE
        WHEN ${free('seq + 1')} THEN seq + 1
        ELSE (SELECT id + 1 FROM (SELECT id FROM ${table} WHERE id > seq
                                  UNION SELECT id FROM chosen_ids WHERE resource = @resource AND id > seq) AS taken
              WHERE ${free('taken.id + 1')}
              ORDER BY id LIMIT 1)
      END AS next
      FROM sqlite_sequence WHERE name = '${table}'`),
    lastId: db.prepare<[], bigint>(`SELECT seq FROM sqlite_sequence WHERE name = '${table}'`).pluck(),
    setLastId: db.prepare<[bigint], unknown>(`UPDATE sqlite_sequence SET seq = ? WHERE name = '${table}'`),
    // A chosen id the sequence has yet to reach is remembered, so it is skipped even once deleted.
    noteChosen: db.prepare<[string, bigint], unknown>('INSERT OR IGNORE INTO chosen_ids (resource, id) VALUES (?, ?)'),
    forgetChosen: db.prepare<[string, bigint], unknown>('DELETE FROM chosen_ids WHERE resource = ? AND id <= ?')
  }
}

/** The id chosen, or the next of the table's own sequence; `insert` runs in the caller's transaction. */
export function sqliteIdDrawer (db: Database.Database, sequence: Sequence, resource: { title: string }) {
  const ids = statementsFor(db, sequence)
  const named = { resource: sequence.resource }
  return <Row>(id: bigint | undefined, insert: (id: bigint) => Row): Row => {
    if (id === undefined) {
      const { last, next } = ids.nextId.get(named) as { last: bigint, next: bigint }
      if (next > MAX_ASSIGNED_ID) throw idsExhausted(resource)
      // AUTOINCREMENT itself moves sqlite_sequence up to an inserted id above it: to `next`.
      const row = insert(next)
      if (next > last + 1n) ids.forgetChosen.run(sequence.resource, next)
      return row
    }
    const last = ids.lastId.get() as bigint
    let row: Row
    try {
      row = insert(id)
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw idTaken(resource, id)
      throw err
    }
    if (id > last) {
      ids.setLastId.run(last)
      if (id <= MAX_ASSIGNED_ID) ids.noteChosen.run(sequence.resource, id)
    }
    return row
  }
}
