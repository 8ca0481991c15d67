import assert from 'node:assert/strict'
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { newToken, runBackup, runCheck, runRestore, runToken, type Output } from '../../../src/main/commands.js'
import { loadConfig } from '../../../src/config/load-config.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { tokenDigest } from '../../../src/auth/tokens.js'
import { TOKEN } from '../../helpers/app.js'
import { AUDIENCE, signingKey, startProvider } from '../../helpers/oidc-provider.js'
import { contentsText, escaped } from '../../helpers/resources.js'
import { capture } from '../../helpers/output.js'
import { TEST_REDIS_URL } from '../../helpers/redis.js'

const tempDir = (): string => mkdtempSync(join(tmpdir(), 'plant-store-commands-'))

/** A plant-store database file holding `names`, closed. */
async function database (file: string, names: string[]): Promise<void> {
  const store = createSqliteStore({ filename: file, synchronous: 'normal' })
  for (const name of names) await store.plants.create({ name })
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
  assert.equal(output.stderr(),
    'plant-store token: the token above is shown only once; add this line to API_TOKENS_FILE and restart:\n')
  // The line is what API_TOKENS_FILE reads.
  const file = join(tempDir(), 'tokens')
  writeFileSync(file, `${line}\n`)
  assert.deepEqual(loadConfig({ API_TOKENS_FILE: file }).namedTokens,
    [{ name: 'ci', scopes: ['plants:read', 'webhooks'], digest: tokenDigest(token) }])
})

test('check: 0 for a good configuration and database (or one not created yet), 1 with the ' +
  'reason otherwise', async () => {
  const dir = tempDir()
  const good = join(dir, 'plants.db')
  await database(good, ['Fern'])
  let output = capture()
  assert.equal(await runCheck(env(good), output), 0)
  assert.equal(output.stdout(),
    `plant-store check: configuration ok\nplant-store check: database ${good} ok (quick_check)\n`)

  output = capture()
  assert.equal(await runCheck(env(join(dir, 'later.db')), output), 0)
  assert.match(output.stdout(), /later\.db does not exist yet; the first start creates it\n$/)
  assert.equal(existsSync(join(dir, 'later.db')), false, 'check creates nothing')

  output = capture()
  assert.equal(await runCheck({ ...env(good), PORT: 'eighty' }, output), 1)
  assert.equal(output.stderr(), 'plant-store: invalid configuration: PORT must be integer\n')

  const foreign = join(dir, 'foreign.db')
  const other = new Database(foreign)
  other.exec('CREATE TABLE accounts (id INTEGER)')
  other.close()
  output = capture()
  assert.equal(await runCheck(env(foreign), output), 1)
  assert.equal(output.stderr(),
    `plant-store check: cannot use the database ${foreign}: the file is not a plant-store database\nplant-store ` +
      'check: failed: the SQLite database\n')

  const text = join(dir, 'notes.txt')
  writeFileSync(text, 'not a database at all, just some text that is long enough to have a header'.repeat(20))
  output = capture()
  assert.equal(await runCheck(env(text), output), 1)
  assert.match(output.stderr(), /the file is not a SQLite database\nplant-store check: failed: the SQLite database\n$/)
})

test('check: a token setting that holds no token fails, as the start does, never "configuration ok"', async () => {
  const dir = tempDir()
  const tokens = join(dir, 'tokens')
  writeFileSync(tokens, '# the last key was revoked\n')
  for (const [settings, message] of [
    [{ API_TOKENS_FILE: tokens },
      `plant-store: invalid configuration: API_TOKENS_FILE holds no token (${tokens}); with no token ` +
        'nothing can call the API\n'],
    [{ API_TOKENS: ' , ' },
      'plant-store: invalid configuration: API_TOKENS is set but holds no token (unset it to have none)\n']
  ] as const) {
    const output = capture()
    assert.equal(await runCheck({ DATABASE_URL: join(dir, 'plants.db'), ...settings }, output), 1)
    assert.equal(output.stdout(), '')
    assert.equal(output.stderr(), message)
  }
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
  await expectFailure((o) => runBackup(join(dir, 'b.db'),
    { DATABASE_URL: 'postgres://db.internal/plants', API_TOKENS: TOKEN }, o),
  'plant-store backup: DATABASE_URL is PostgreSQL; use pg_dump and pg_restore (docs/operations.md, ' +
      '"Backups and restore")\n')
  await expectFailure((o) => runRestore(join(dir, 'b.db'), { DATABASE_URL: ':memory:', API_TOKENS: TOKEN }, o),
    'plant-store restore: DATABASE_URL is :memory:, there is no file to restore\n')
  await expectFailure((o) => runBackup(join(dir, 'b.db'), { DATABASE_URL: file, API_TOKENS: 'short' }, o),
    'plant-store: invalid configuration: every API token needs at least 32 characters (set ALLOW_WEAK_TOKENS=1 for ' +
      'local trials only)\n')
  await expectFailure((o) => runBackup(join(dir, 'b.db'), env(join(dir, 'missing.db')), o),
    `plant-store backup: the database ${join(dir, 'missing.db')} does not exist\n`)
  await expectFailure((o) => runBackup(file, env(file), o),
    `plant-store backup: ${file} already exists; choose another name or remove it first\n`)
  await expectFailure((o) => runRestore(join(dir, 'nothing.bak'), env(file), o),
    `plant-store restore: the backup ${join(dir, 'nothing.bak')} does not exist\n`)
  await expectFailure((o) => runRestore(file, env(file), o), 'plant-store restore: the backup is the database itself\n')
  await expectFailure((o) => runRestore(dir, env(file), o, { force: true }),
    `plant-store restore: the backup ${dir} is a directory, not a backup file (plant-store backup writes one)\n`)
  await expectFailure((o) => runRestore(file, env(dir), o, { force: true }),
    `plant-store restore: the database ${dir} (DATABASE_URL) is a directory, not a database file\n`)

  const garbage = join(dir, 'garbage.bak')
  writeFileSync(garbage, 'x'.repeat(8192))
  await expectFailure((o) => runRestore(garbage, env(file), o, { force: true }),
    `plant-store restore: the backup ${garbage} is unusable: not a SQLite database\n`)
  const foreign = join(dir, 'foreign.bak')
  const other = new Database(foreign)
  other.exec('CREATE TABLE accounts (id INTEGER)')
  other.close()
  await expectFailure((o) => runRestore(foreign, env(file), o, { force: true }),
    `plant-store restore: the backup ${foreign} is unusable: the file is not a plant-store database\n`)

  // Nothing was touched: the database still holds its one plant, and no temporary file is left.
  const db = new Database(file, { readonly: true })
  assert.deepEqual(db.prepare('SELECT name FROM plants').pluck().all(), ['Fern'])
  db.close()
})

test('backup, then restore over a changed database: the backup\'s plants come back and ' +
  'the stale WAL is gone', async () => {
  const dir = tempDir()
  const file = join(dir, 'plants.db')
  await database(file, ['Fern', 'Rose'])
  const backup = join(dir, 'plants.bak')
  let output = capture()
  assert.equal(await runBackup(backup, env(file), output), 0)
  assert.equal(output.stdout(),
    `plant-store backup: ${file} → ${backup}: ${contentsText({ plants: 2 })}, ${pages(backup)} pages, ` +
      'integrity_check ok\n')

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
  assert.equal(runRestore(backup, env(file), output, { force: true }), 0)
  const kept = /kept as (\S+)\n$/.exec(output.stdout())?.[1] ?? ''
  assert.equal(output.stdout(), `plant-store restore: ${backup} → ${file}: ${contentsText({ plants: 2 })}, ` +
    'integrity_check ok; start the server again\n' +
    `plant-store restore: the database it replaced is kept as ${kept}\n`)
  assert.match(kept, new RegExp(`^${file.replace(/[.\\/]/g, '\\$&')}\\.before-restore-\\d{8}T\\d{6}Z$`))
  // The replaced database, its WAL folded in, is whole beside the restored one.
  const old = new Database(kept, { readonly: true })
  assert.deepEqual(old.prepare('SELECT name FROM plants ORDER BY id').pluck().all(),
    ['Fern', 'Rose', 'Lily', 'in the WAL only'])
  old.close()
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

test('restore refuses an existing database without --force, and leaves it as it was', async () => {
  const dir = tempDir()
  const file = join(dir, 'plants.db')
  await database(file, ['Fern'])
  const backup = join(dir, 'plants.bak')
  assert.equal(await runBackup(backup, env(file), capture()), 0)
  await database(file, ['Rose'])
  const output = capture()
  assert.equal(runRestore(backup, env(file), output), 1)
  assert.equal(output.stderr(),
    `plant-store restore: the database ${file} exists; run restore with --force to replace it (the old file ` +
      'is kept beside it)\n')
  assert.equal(output.stdout(), '')
  const db = new Database(file, { readonly: true })
  assert.deepEqual(db.prepare('SELECT name FROM plants ORDER BY id').pluck().all(), ['Fern', 'Rose'])
  db.close()
  assert.deepEqual(readdirSync(dir).filter((name) => name.includes('restore')), [])

  // Into a place with no database yet, no --force is needed and nothing is kept.
  const fresh = join(dir, 'fresh.db')
  const restored = capture()
  assert.equal(runRestore(backup, env(fresh), restored), 0)
  assert.equal(restored.stdout(),
    `plant-store restore: ${backup} → ${fresh}: ${contentsText({ plants: 1 })}, integrity_check ok; ` +
      'start the server again\n')
})

test('backup - writes the consistent copy to stdout and its report to stderr, and leaves no file behind', async () => {
  const dir = tempDir()
  const file = join(dir, 'plants.db')
  await database(file, ['Fern', 'Rose'])
  const output = capture()
  assert.equal(await runBackup('-', env(file), output), 0)
  assert.equal(output.stdout(), '')
  assert.match(output.stderr(),
    new RegExp(
      `^plant-store backup: ${file.replace(/[.\\/]/g, '\\$&')} → stdout: ${escaped(contentsText({ plants: 2 }))}, ` +
        '\\d+ pages, integrity_check ok\n$'))
  assert.deepEqual(readdirSync(dir), ['plants.db'])
  const copy = join(dir, 'copy.db')
  writeFileSync(copy, output.bytes())
  const db = new Database(copy, { readonly: true })
  assert.deepEqual(db.prepare('SELECT name FROM plants ORDER BY id').pluck().all(), ['Fern', 'Rose'])
  assert.equal(db.pragma('integrity_check', { simple: true }), 'ok')
  db.close()

  const terminal = capture()
  Object.assign(terminal.data, { isTTY: true })
  assert.equal(await runBackup('-', env(file), terminal), 1)
  assert.equal(terminal.stderr(),
    'plant-store backup: stdout is a terminal; redirect it to a file or a pipe (plant-store backup - > plants.bak)\n')
  assert.equal(terminal.bytes().length, 0)
})

test('check verifies Redis when REDIS_URL is set, names it without its password, and says what failed', async () => {
  const dir = tempDir()
  const file = join(dir, 'plants.db')
  await database(file, ['Fern'])
  // A port that refuses: a listener closed again.
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const { port } = closed.address() as AddressInfo
  await new Promise((resolve) => closed.close(resolve))

  let output = capture()
  assert.equal(await runCheck({ ...env(file), REDIS_URL: `redis://:secret-password@127.0.0.1:${port}/0` }, output), 1)
  assert.equal(output.stdout(),
    `plant-store check: configuration ok\nplant-store check: database ${file} ok (quick_check)\n`)
  assert.match(output.stderr(),
    new RegExp(
      `^plant-store check: Redis redis://127\\.0\\.0\\.1:${port}/0: .*ECONNREFUSED.*\nplant-store ` +
        'check: failed: Redis\n$'))
  assert.doesNotMatch(output.stderr(), /secret-password/)

  // Both failing: both named.
  const notes = join(dir, 'notes.txt')
  writeFileSync(notes, 'x'.repeat(4096))
  output = capture()
  assert.equal(await runCheck({ ...env(notes), REDIS_URL: `redis://127.0.0.1:${port}` }, output), 1)
  assert.match(output.stderr(), /\nplant-store check: failed: the SQLite database, Redis\n$/)

  // A Redis that answers: the one the rate-limit tests use, where there is one.
  if (TEST_REDIS_URL === undefined) return
  output = capture()
  assert.equal(await runCheck({ ...env(file), REDIS_URL: TEST_REDIS_URL }, output), 0, output.stderr())
  assert.ok(output.stdout().endsWith(`\nplant-store check: Redis ${TEST_REDIS_URL} answers\n`), output.stdout())
})

test('files: a new database, its WAL and shared-memory files, and backups are readable by their ' +
  'owner only', async (t) => {
  const umask = process.umask(0o022)
  t.after(() => process.umask(umask))
  const dir = tempDir()
  const file = join(dir, 'plants.db')
  const store = createSqliteStore({ filename: file, synchronous: 'normal', checkpoint: false })
  await store.plants.create({ name: 'Fern' })
  const mode = (path: string): string => (statSync(path).mode & 0o777).toString(8)
  assert.deepEqual([mode(file), mode(`${file}-wal`), mode(`${file}-shm`)], ['600', '600', '600'])
  const backup = join(dir, 'plants.bak')
  assert.equal(await runBackup(backup, env(file), capture()), 0)
  assert.equal(mode(backup), '600')
  await store.close()

  // A restored database is owner-only even when the backup was not (copied elsewhere, say).
  chmodSync(backup, 0o644)
  const restored = join(dir, 'restored.db')
  assert.equal(runRestore(backup, env(restored), capture()), 0)
  assert.equal(mode(restored), '600')
})

test('check refuses what serve refuses: a PostgreSQL schema of PostgreSQL\'s own (one ' +
  'validation for both)', async () => {
  const output = capture()
  assert.equal(
    await runCheck({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test?schema=pg_catalog', API_TOKENS: TOKEN },
      output), 1)
  assert.equal(output.stderr(),
    'plant-store: invalid configuration: DATABASE_URL schema pg_catalog is PostgreSQL\'s own (pg_… and ' +
      'information_schema are reserved): choose another name\n')
  assert.equal(output.stdout(), '')
})

test('check looks at OIDC_ISSUER: the provider\'s discovery document and key set, named; a ' +
  'provider down fails it', async (t) => {
  const file = join(tempDir(), 'plants.db')
  const op = await startProvider([await signingKey('check-a'), await signingKey('check-b')])
  t.after(op.stop)
  const settings = { DATABASE_URL: file, OIDC_ISSUER: op.issuer, OIDC_AUDIENCE: AUDIENCE }
  let output = capture()
  assert.equal(await runCheck(settings, output), 0, output.stderr())
  assert.equal(output.stdout(), `plant-store check: configuration ok\nplant-store check: database ${file} does not ` +
    'exist yet; the first start creates it\n' +
    `plant-store check: the OpenID provider ${op.issuer} answers: discovery document and 2 keys\n`)

  await op.stop()
  output = capture()
  assert.equal(await runCheck(settings, output), 1)
  assert.match(output.stderr(),
    new RegExp(
      `^plant-store check: the OpenID provider ${op.issuer.replace(/[.]/g, '\\.')}: fetch failed ` +
        '\\(.*ECONNREFUSED.*\\)\nplant-store check: failed: the OpenID provider\n$'))
})
