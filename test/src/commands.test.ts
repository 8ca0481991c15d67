import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { newToken, runBackup, runCheck, runRestore, runToken, type Output } from '../../src/commands.js'
import { loadConfig } from '../../src/load-config.js'
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js'
import { tokenDigest } from '../../src/tokens.js'
import { TOKEN } from '../helpers/app.js'

function capture (): Output & { stdout: () => string, stderr: () => string } {
  let out = ''
  let err = ''
  return { out: (text) => { out += text }, err: (text) => { err += text }, stdout: () => out, stderr: () => err }
}

const tempDir = (): string => mkdtempSync(join(tmpdir(), 'plant-store-commands-'))

/** A plant-store database file holding `names`, closed. */
async function database (file: string, names: string[]): Promise<void> {
  const store = createSqliteStore({ filename: file, synchronous: 'normal' })
  for (const name of names) await store.create({ name })
  await store.close()
}

const env = (file: string): NodeJS.ProcessEnv => ({ DATABASE_URL: file, API_TOKENS: TOKEN })

test('token prints a new 43-character base64url token (32 random bytes) each time', () => {
  const output = capture()
  assert.equal(runToken(output), 0)
  assert.match(output.stdout(), /^[A-Za-z0-9_-]{43}\n$/)
  assert.notEqual(newToken(), newToken())
})

test('token with an entry prints the token once, then the API_TOKENS_FILE line holding only its digest', () => {
  const output = capture()
  assert.equal(runToken(output, { name: 'ci', scopes: ['plants:read', 'webhooks'] }), 0)
  const [token = '', line = '', ...rest] = output.stdout().split('\n')
  assert.match(token, /^[A-Za-z0-9_-]{43}$/)
  assert.equal(line, `ci plants:read,webhooks sha256:${tokenDigest(token)}`)
  assert.deepEqual(rest, [''])
  assert.equal(output.stderr(), 'plant-store token: the token above is shown only once; add this line to API_TOKENS_FILE and restart:\n')
  // The line is what API_TOKENS_FILE reads.
  const file = join(tempDir(), 'tokens')
  writeFileSync(file, `${line}\n`)
  assert.deepEqual(loadConfig({ API_TOKENS_FILE: file }).namedTokens, [{ name: 'ci', scopes: ['plants:read', 'webhooks'], digest: tokenDigest(token) }])
})

test('check: 0 for a good configuration and database (or one not created yet), 1 with the reason otherwise', async () => {
  const dir = tempDir()
  const good = join(dir, 'plants.db')
  await database(good, ['Fern'])
  let output = capture()
  assert.equal(await runCheck(env(good), output), 0)
  assert.equal(output.stdout(), `plant-store check: configuration ok\nplant-store check: database ${good} ok (quick_check)\n`)

  output = capture()
  assert.equal(await runCheck(env(join(dir, 'later.db')), output), 0)
  assert.match(output.stdout(), /later\.db does not exist yet; the first start creates it\n$/)
  assert.equal(existsSync(join(dir, 'later.db')), false, 'check creates nothing')

  output = capture()
  assert.equal(await runCheck({ ...env(good), PORT: 'eighty' }, output), 1)
  assert.equal(output.stderr(), 'plant-store: invalid configuration: env/PORT must be integer\n')

  const foreign = join(dir, 'foreign.db')
  const other = new Database(foreign)
  other.exec('CREATE TABLE accounts (id INTEGER)')
  other.close()
  output = capture()
  assert.equal(await runCheck(env(foreign), output), 1)
  assert.equal(output.stderr(), `plant-store check: cannot use the database ${foreign}: the file is not a plant-store database\n`)

  const text = join(dir, 'notes.txt')
  writeFileSync(text, 'not a database at all, just some text that is long enough to have a header'.repeat(20))
  output = capture()
  assert.equal(await runCheck(env(text), output), 1)
  assert.match(output.stderr(), /the file is not a SQLite database\n$/)
})

test('backup and restore refuse what they cannot do, saying why', async () => {
  const dir = tempDir()
  const file = join(dir, 'plants.db')
  await database(file, ['Fern'])
  const expectFailure = async (run: (output: Output) => number | Promise<number>, message: string): Promise<void> => {
    const output = capture()
    assert.equal(await run(output), 1)
    assert.equal(output.stderr(), message)
    assert.equal(output.stdout(), '')
  }
  await expectFailure((o) => runBackup(join(dir, 'b.db'), { DATABASE_URL: 'postgres://db.internal/plants', API_TOKENS: TOKEN }, o),
    'plant-store backup: DATABASE_URL is PostgreSQL; use pg_dump and pg_restore (README, "Backups")\n')
  await expectFailure((o) => runRestore(join(dir, 'b.db'), { DATABASE_URL: ':memory:', API_TOKENS: TOKEN }, o),
    'plant-store restore: DATABASE_URL is :memory:, there is no file to restore\n')
  await expectFailure((o) => runBackup(join(dir, 'b.db'), { DATABASE_URL: file, API_TOKENS: 'short' }, o),
    'plant-store: invalid configuration: every API token needs at least 32 characters (set ALLOW_WEAK_TOKENS=1 for local trials only)\n')
  await expectFailure((o) => runBackup(join(dir, 'b.db'), env(join(dir, 'missing.db')), o),
    `plant-store backup: the database ${join(dir, 'missing.db')} does not exist\n`)
  await expectFailure((o) => runBackup(file, env(file), o),
    `plant-store backup: ${file} already exists; choose another name or remove it first\n`)
  await expectFailure((o) => runRestore(join(dir, 'nothing.bak'), env(file), o),
    `plant-store restore: the backup ${join(dir, 'nothing.bak')} does not exist\n`)
  await expectFailure((o) => runRestore(file, env(file), o), 'plant-store restore: the backup is the database itself\n')

  const garbage = join(dir, 'garbage.bak')
  writeFileSync(garbage, 'x'.repeat(8192))
  await expectFailure((o) => runRestore(garbage, env(file), o), `plant-store restore: the backup ${garbage} is unusable: not a SQLite database\n`)
  const foreign = join(dir, 'foreign.bak')
  const other = new Database(foreign)
  other.exec('CREATE TABLE accounts (id INTEGER)')
  other.close()
  await expectFailure((o) => runRestore(foreign, env(file), o), `plant-store restore: the backup ${foreign} is unusable: the file is not a plant-store database\n`)

  // Nothing was touched: the database still holds its one plant, and no temporary file is left.
  const db = new Database(file, { readonly: true })
  assert.deepEqual(db.prepare('SELECT name FROM plants').pluck().all(), ['Fern'])
  db.close()
})

test('backup, then restore over a changed database: the backup\'s plants come back and the stale WAL is gone', async () => {
  const dir = tempDir()
  const file = join(dir, 'plants.db')
  await database(file, ['Fern', 'Rose'])
  const backup = join(dir, 'plants.bak')
  let output = capture()
  assert.equal(await runBackup(backup, env(file), output), 0)
  assert.equal(output.stdout(), `plant-store backup: ${file} → ${backup}: 2 plants, 2 pages, integrity_check ok\n`.replace('2 pages', `${pages(backup)} pages`))

  // The database moves on, and a WAL is left behind as a crashed server would leave it.
  await database(file, ['Lily'])
  const live = new Database(file)
  live.pragma('journal_mode = WAL')
  live.pragma('wal_autocheckpoint = 0')
  live.prepare("INSERT INTO plants (name, created_at, updated_at) VALUES ('in the WAL only', 0, 0)").run()
  const wal = readFileSync(`${file}-wal`)
  live.close()
  writeFileSync(`${file}-wal`, wal)

  output = capture()
  assert.equal(runRestore(backup, env(file), output), 0)
  assert.equal(output.stdout(), `plant-store restore: ${backup} → ${file}: 2 plants, integrity_check ok; start the server again\n`)
  assert.equal(existsSync(`${file}-wal`), false)
  const db = new Database(file, { readonly: true })
  assert.deepEqual(db.prepare('SELECT name FROM plants ORDER BY id').pluck().all(), ['Fern', 'Rose'])
  assert.equal(db.pragma('integrity_check', { simple: true }), 'ok')
  db.close()
})

function pages (file: string): number {
  const db = new Database(file, { readonly: true })
  try {
    return Number(db.pragma('page_count', { simple: true }))
  } finally {
    db.close()
  }
}
