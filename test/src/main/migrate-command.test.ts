import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { describe, test } from 'node:test'
import { promisify } from 'node:util'
import Database from 'better-sqlite3'
import { runCheck } from '../../../src/main/commands.js'
import { runMigrate } from '../../../src/main/migrate-command.js'
import { migrations as postgresMigrations } from '../../../src/store/postgres/migrations.js'
import { applyMigration, APPLICATION_ID, migrations as sqliteMigrations } from '../../../src/store/sqlite/migrations.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { TOKEN } from '../../helpers/app.js'
import { cleanupStack, tempDatabaseFile } from '../../helpers/cleanup.js'
import { capture } from '../../helpers/output.js'
import { directUrl, scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { expectStartFailure, SERVER_JS, startServer } from '../../helpers/server-process.js'

const run = promisify(execFile)

/** What `migrate` prints for a schema migrated from version `from` by `steps`. */
function applied (steps: ReadonlyArray<{ name: string }>, from: number): string {
  return steps.slice(from).map(({ name }, i) => `plant-store migrate: applied migration ${from + i + 1}: ${name}\n`)
    .join('') + `plant-store migrate: schema version ${steps.length} (was ${from})\n`
}

const env = (databaseUrl: string, more: Record<string, string> = {}): NodeJS.ProcessEnv =>
  ({ API_TOKENS: TOKEN, DATABASE_URL: databaseUrl, ...more })

describe('plant-store migrate on SQLite', () => {
  test('a new file: every step, then the version; run again it applies nothing', async (t) => {
    const file = tempDatabaseFile(cleanupStack(t), 'plant-store-migrate-')
    let output = capture()
    assert.equal(await runMigrate(env(file), output), 0, output.stderr())
    assert.equal(output.stdout(), applied(sqliteMigrations, 0))
    assert.equal(output.stderr(), '')
    output = capture()
    assert.equal(await runMigrate(env(file), output), 0, output.stderr())
    assert.equal(output.stdout(), `plant-store migrate: schema version ${sqliteMigrations.length}: nothing to apply\n`)
  })

  test('a file of the release before: the copy it kept, then the step', async (t) => {
    const file = tempDatabaseFile(cleanupStack(t), 'plant-store-migrate-')
    const before = fileOfTheReleaseBefore(file)
    const output = capture()
    assert.equal(await runMigrate(env(file), output), 0, output.stderr())
    assert.equal(output.stdout(), `plant-store migrate: kept a copy of the database before migrating: ${file}.schema-` +
      `${before}.bak\n${applied(sqliteMigrations, before)}`)
  })

  test('refused, exit 1, while a server has the file open; and on :memory:', async (t) => {
    const file = tempDatabaseFile(cleanupStack(t), 'plant-store-migrate-')
    const store = createSqliteStore({ filename: file, checkpoint: false })
    t.after(async () => { await store.close() })
    let output = capture()
    assert.equal(await runMigrate(env(file), output), 1)
    assert.equal(output.stdout(), '')
    assert.match(output.stderr(), /^plant-store migrate: it is in use by another process .*; no step was applied\n$/)
    output = capture()
    assert.equal(await runMigrate(env(':memory:'), output), 1)
    assert.equal(output.stderr(),
      'plant-store migrate: DATABASE_URL is :memory:, there is nothing to migrate; no step was applied\n')
  })

  test('a bad setting: exit 1 naming it', async () => {
    const output = capture()
    assert.equal(await runMigrate(env('data/x.db', { MIGRATE_ON_START: 'yes' }), output), 1)
    assert.match(output.stderr(), /^plant-store migrate: invalid configuration: MIGRATE_ON_START must be equal to one/)
  })
})

/** A file at the schema version before this release's, as the release before left it. */
function fileOfTheReleaseBefore (file: string): number {
  const before = sqliteMigrations.length - 1
  const db = new Database(file)
  for (let step = 0; step < before; step++) applyMigration(db, step)
  db.pragma(`application_id = ${APPLICATION_ID}`)
  db.pragma(`user_version = ${before}`)
  db.close()
  return before
}

test('plant-store check on SQLite with MIGRATE_ON_START=0: a file behind fails naming plant-store migrate; ' +
  'once migrated it passes', async (t) => {
  const file = tempDatabaseFile(cleanupStack(t), 'plant-store-check-')
  const before = fileOfTheReleaseBefore(file)
  let output = capture()
  assert.equal(await runCheck(env(file, { MIGRATE_ON_START: '0' }), output), 1)
  assert.equal(output.stderr(), `plant-store check: cannot use the database ${file}: the database schema (version ` +
    `${before}) is behind this plant-store (${sqliteMigrations.length}) and MIGRATE_ON_START=0: run ` +
    '`plant-store migrate` first (docs/upgrading.md)\nplant-store check: failed: the SQLite database\n')
  output = capture()
  assert.equal(await runCheck(env(file), output), 0, output.stderr())
  assert.equal(await runMigrate(env(file), capture()), 0)
  output = capture()
  assert.equal(await runCheck(env(file, { MIGRATE_ON_START: '0' }), output), 0, output.stderr())
  assert.match(output.stdout(), new RegExp(`plant-store check: database ${file} ok \\(quick_check\\)\n$`))
})

describe('plant-store migrate on PostgreSQL', { skip: TEST_DATABASE_URL === undefined }, () => {
  test('over DATABASE_DIRECT_URL: every step, then the version; run again it applies nothing', async (t) => {
    const { url } = scratchDatabaseUrl(cleanupStack(t))
    const settings = env(url, { DATABASE_DIRECT_URL: directUrl(url) })
    let output = capture()
    assert.equal(await runMigrate(settings, output), 0, output.stderr())
    assert.equal(output.stdout(), applied(postgresMigrations, 0))
    output = capture()
    assert.equal(await runMigrate(settings, output), 0, output.stderr())
    assert.equal(output.stdout(),
      `plant-store migrate: schema version ${postgresMigrations.length}: nothing to apply\n`)
  })

  test('plant-store check with MIGRATE_ON_START=0: a schema behind fails naming plant-store migrate; ' +
    'once migrated it passes', async (t) => {
    const { url } = scratchDatabaseUrl(cleanupStack(t))
    let output = capture()
    assert.equal(await runCheck(env(url, { MIGRATE_ON_START: '0' }), output), 1)
    assert.match(output.stderr(), new RegExp(
      '^plant-store check: the PostgreSQL database [^\\n]*: the database schema ' +
      `\\(version 0\\) is behind this plant-store \\(${postgresMigrations.length}\\) and MIGRATE_ON_START=0: run ` +
      '`plant-store migrate` first \\(docs/upgrading\\.md\\)\nplant-store check: failed: PostgreSQL\n$'))
    assert.equal(await runCheck(env(url), capture()), 0)
    assert.equal(await runMigrate(env(url), capture()), 0)
    output = capture()
    assert.equal(await runCheck(env(url, { MIGRATE_ON_START: '0' }), output), 0, output.stderr())
    assert.match(output.stdout(), /answers and its schema is usable\n$/)
  })

  test('a database that does not answer: exit 1 with the cause and what to do', async () => {
    const output = capture()
    const settings = env('postgres://postgres@127.0.0.1:1/test', { PG_STARTUP_TIMEOUT_MS: '0' })
    assert.equal(await runMigrate(settings, output), 1)
    assert.equal(output.stdout(), '')
    assert.match(output.stderr(),
      /^plant-store migrate: connect ECONNREFUSED 127\.0\.0\.1:1; nothing listens there: .*; no step was applied\n$/)
  })
})

test('the process: MIGRATE_ON_START=0 refuses a database behind its schema naming plant-store migrate; ' +
  'after migrate it serves', async (t) => {
  const file = tempDatabaseFile(cleanupStack(t), 'plant-store-migrate-')
  const settings = { DATABASE_URL: file, MIGRATE_ON_START: '0', LOG_FORMAT: 'pretty' }
  const refused = await expectStartFailure({ env: settings })
  assert.equal(refused.code, 1)
  assert.equal(refused.stderr, `plant-store: cannot use the database ${file}: the database schema (version 0) is ` +
    `behind this plant-store (${sqliteMigrations.length}) and MIGRATE_ON_START=0: run \`plant-store migrate\` first ` +
    '(docs/upgrading.md); the file was left untouched\n')
  assert.equal(existsSync(file), false)

  const help = await run(process.execPath, [SERVER_JS, 'migrate', '--help'])
  assert.match(help.stdout, /^Usage: plant-store migrate …\n\n {2}migrate {10}apply the database's pending migrations/)
  const migrated = await run(process.execPath, [SERVER_JS, 'migrate'],
    { env: { PATH: process.env.PATH, NODE_V8_COVERAGE: process.env.NODE_V8_COVERAGE, DATABASE_URL: file } })
  assert.equal(migrated.stdout, applied(sqliteMigrations, 0))
  const server = await startServer(t, { env: settings })
  assert.equal((await fetch(`${server.baseUrl}/health/ready`)).status, 200)
})

test('the start log names each migration a start applied, and the version reached', async (t) => {
  const server = await startServer(t, { env: { LOG_LEVEL: 'info' } })
  const last = await server.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('schema version'))
  assert.equal(last.msg, `schema version ${sqliteMigrations.length} (was 0)`)
  assert.equal(last.schemaVersion, sqliteMigrations.length)
  const lines = server.stdout().split('\n').filter((line) => line.includes('"applied migration '))
  assert.deepEqual(lines.map((line) => (JSON.parse(line) as { msg: string }).msg),
    sqliteMigrations.map(({ name }, i) => `applied migration ${i + 1}: ${name}`))
})
