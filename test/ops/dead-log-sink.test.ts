import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { AUTH } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'

test('a log sink that stopped reading stdout does not keep SIGTERM from exiting: the database is closed cleanly, ' +
  'then the process exits 0', { timeout: 60_000 }, async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'plant-store-dead-sink-')), 'plants.db')
  const server = await startServer(undefined,
    { env: { DATABASE_URL: file, LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '500' } })
  const created = await fetch(`${server.baseUrl}/plants`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: '{"name":"kept"}'
  })
  assert.equal(created.status, 201)

  // The reader of stdout (a log shipper) stops reading: the pipe fills and stays full.
  assert.ok(server.child.stdout !== null)
  server.child.stdout.pause()
  let received = 0
  server.child.stdout.on('data', (chunk: Buffer) => { received += chunk.length })
  // About 8 MB of access lines (each carries its 4 KB URL): far more than any pipe buffer holds.
  const url = `${server.baseUrl}/${'x'.repeat(4000)}`
  for (let batch = 0; batch < 100; batch++) {
    const statuses = await Promise.all(Array.from({ length: 20 }, async () => (await fetch(url)).status))
    assert.deepEqual(new Set(statuses), new Set([404]))
  }

  server.child.kill('SIGTERM')
  // Without the deadline this never resolves: pino's exit-time flush retries the full pipe forever.
  assert.equal(await server.exited, 0)
  assert.ok(received < 8_000_000, `the sink read ${received} bytes: it really stopped reading`)

  // Closed cleanly first: the WAL was checkpointed into the file, which is intact.
  assert.equal(existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0, 0)
  const db = new Database(file, { readonly: true })
  assert.equal(db.pragma('integrity_check', { simple: true }), 'ok')
  assert.deepEqual(db.prepare('SELECT name FROM plants').pluck().all(), ['kept'])
  db.close()
})
