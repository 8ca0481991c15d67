import assert from 'node:assert/strict'
import {
  chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync,
  writeFileSync, writeSync
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { APPLICATION_ID, migrations } from '../../src/store/sqlite/migrations.js'
import { StoreOpenError } from '../../src/lib/errors.js'
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js'
import { tempDatabaseFile } from '../helpers/cleanup.js'
import { AUTH } from '../helpers/app.js'
import { expectStartFailure, fatalMessage, startServer } from '../helpers/server-process.js'

test('a database at schema version 1 is migrated at start-up, its plants kept', async (t) => {
  const file = tempDatabaseFile(t, 'plant-store-file-')
  const old = new Database(file)
  old.exec(String(migrations[0]?.up))
  old.pragma(`application_id = ${APPLICATION_ID}`)
  old.pragma('user_version = 1')
  old.prepare('INSERT INTO plants (id, name, tag, created_at, updated_at) VALUES (7, \'Fern\', NULL, 0, 0)').run()
  old.close()

  const store = createSqliteStore({ filename: file })
  assert.equal((await store.plants.get(7n))?.name, 'Fern')
  // Version 2's table is there: an idempotent create works.
  const created = await store.plants.create({ name: 'Ivy' }, { scope: 's', key: 'k', fingerprint: 'f' })
  assert.equal(created.item.id, 8n)
  await store.close()
  const db = new Database(file, { readonly: true })
  assert.equal(db.pragma('user_version', { simple: true }), migrations.length)
  db.close()
})

/**
 * Opening must fail with this message and leave the file exactly as it was, with nothing written
 * beside it (a WAL-mode file may get SQLite's empty -wal/-shm from the read-only look).
 */
function assertRefused (file: string, message: RegExp): void {
  const before = readFileSync(file)
  assert.throws(() => createSqliteStore({ filename: file }),
    (err: unknown) => err instanceof StoreOpenError && message.test(err.message))
  assert.ok(readFileSync(file).equals(before), 'the file was changed')
  assert.equal(existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0, 0)
}

test('a SQLite file of another application is refused and left untouched', (t) => {
  const file = tempDatabaseFile(t, 'plant-store-file-')
  const other = new Database(file)
  other.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, \'hello\')')
  other.close()
  assertRefused(file, /^the file is not a plant-store database$/)
})

test('a file that is not SQLite at all is refused and left untouched', (t) => {
  const file = tempDatabaseFile(t, 'plant-store-file-')
  writeFileSync(file, 'name,tag\nFern,green\n'.repeat(200))
  assertRefused(file, /^the file is not a SQLite database$/)
})

test('a plant-store database from a newer version is refused and left untouched', (t) => {
  const file = tempDatabaseFile(t, 'plant-store-file-')
  const newer = new Database(file)
  newer.pragma(`application_id = ${APPLICATION_ID}`)
  newer.pragma(`user_version = ${migrations.length + 1}`)
  newer.close()
  assertRefused(file,
    new RegExp(
      `^the database schema \\(version ${migrations.length + 1}\\) is newer than ` +
        `this plant-store \\(${migrations.length}\\)$`))
})

test('a corrupt plant-store database is refused and left untouched', async (t) => {
  const file = tempDatabaseFile(t, 'plant-store-file-')
  const store = createSqliteStore({ filename: file })
  for (let i = 0; i < 500; i++) await store.plants.create({ name: `Plant ${i} ${'x'.repeat(40)}` })
  await store.close()
  // Garbage over the third page (a b-tree page of the plants table): the header still says SQLite.
  const fd = openSync(file, 'r+')
  writeSync(fd, Buffer.alloc(4096, 0x55), 0, 4096, 2 * 4096)
  closeSync(fd)
  assertRefused(file, /^the database file is corrupt/)
})

test('the server refuses a foreign file with a clear message and exit code 1', async (t) => {
  const file = tempDatabaseFile(t, 'plant-store-file-')
  writeFileSync(file, 'not a database\n'.repeat(100))
  const before = readFileSync(file)
  const { code, stderr } = await expectStartFailure({ env: { DATABASE_URL: file } })
  assert.equal(code, 1)
  assert.equal(fatalMessage(stderr),
    `cannot use the database ${file}: the file is not a SQLite database; the file was left untouched`)
  assert.ok(readFileSync(file).equals(before))
})

test('a second server on the same SQLite file is refused, naming the file; the first keeps serving', async (t) => {
  const first = await startServer(t)
  const { code, stdout, stderr } = await expectStartFailure({ env: { DATABASE_URL: first.databaseUrl } })
  assert.equal(code, 1)
  assert.equal(stdout, '')
  assert.equal(fatalMessage(stderr), `cannot use the database ${first.databaseUrl}: it is in use by another process ` +
    '(a plant-store server running on it?): ' +
    'one server per SQLite file; stop the other, or give this one another DATABASE_URL (several instances need ' +
      'PostgreSQL, docs/scaling.md); ' +
    'the file was left untouched')
  assert.equal((await fetch(`${first.baseUrl}/plants`, { headers: AUTH })).status, 200)
  // Once the first has stopped, the file is free again.
  assert.equal(await first.stop(), 0)
  const next = await startServer(t, { env: { DATABASE_URL: first.databaseUrl } })
  assert.equal((await fetch(`${next.baseUrl}/plants`, { headers: AUTH })).status, 200)
})

test('a folder the server may not write: the message says which user must own it (chown), not ' +
  'only EACCES', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-eacces-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  chmodSync(dir, 0o755)
  const data = join(dir, 'data')
  mkdirSync(data, { mode: 0o555 })
  // As root (CI, a container) the server runs as nobody against a root-owned folder; otherwise as this user, the folder
  // read-only.
  const uid = process.getuid?.() === 0 ? 65534 : process.getuid?.()
  const file = join(data, 'plants.db')
  const { code, stderr } = await expectStartFailure({ env: { DATABASE_URL: file }, ...(uid === 65534 && { uid }) })
  assert.equal(code, 1)
  assert.equal(fatalMessage(stderr), `cannot use the database ${file}: permission denied ` +
    `(EACCES): the folder ${data} must be writable by ` +
    `uid ${uid}, the user this process runs as (on the host of a mounted folder: chown ${uid} <that folder>); the ` +
      'file was left untouched')
})
