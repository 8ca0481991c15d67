import assert from 'node:assert/strict'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { prepareOnUse } from '../../../src/store/sqlite/prepare-on-use.js'

test('prepareOnUse: a statement is compiled at its first run, with the modifiers chained before it; the ' +
  'rest is the connection', () => {
  const raw = new Database(':memory:')
  const db = prepareOnUse(raw)
  const missing = db.prepare('SELECT x FROM later')
  const count = db.prepare<[], number>('SELECT count(*) FROM later').pluck()
  const rows = db.prepare<[number], unknown[]>('SELECT x, x * 2 FROM later WHERE x >= ? ORDER BY x').raw(true)
  db.exec('CREATE TABLE later (x INTEGER)')
  db.transaction(() => { for (const x of [1, 2, 3]) db.prepare('INSERT INTO later (x) VALUES (?)').run(x) })()
  assert.equal(count.get(), 3)
  assert.deepEqual(rows.all(2), [[2, 4], [3, 6]])
  assert.deepEqual(missing.pluck().all(), [1, 2, 3])
  assert.equal(missing.source, 'SELECT x FROM later')
  assert.equal(missing.reader, true)
  assert.throws(() => db.prepare('SELECT y FROM nowhere').get(), /no such table: nowhere/)
  assert.equal(db.open, true)
  db.close()
  assert.equal(raw.open, false)
})
