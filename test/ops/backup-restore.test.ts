import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import Database from 'better-sqlite3'
import { AUTH, TOKEN } from '../helpers/app.js'
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js'
import { contentsText, escaped } from '../helpers/resources.js'
import { SERVER_JS, startServer } from '../helpers/server-process.js'

/** Runs the plant-store executable with these arguments and settings; resolves with its exit code and output. */
async function plantStore (args: string[],
  env: Record<string, string> = {}): Promise<{ code: number, stdout: string, stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [SERVER_JS, ...args], {
      env: {
        PATH: process.env.PATH,
        API_TOKENS: TOKEN,
        ...(process.env.NODE_V8_COVERAGE !== undefined && { NODE_V8_COVERAGE: process.env.NODE_V8_COVERAGE }),
        ...env
      }
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const failure = err as { code: number, stdout: string, stderr: string }
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr }
  }
}

test('plant-store --help, an unknown command, token and check', async () => {
  const help = await plantStore(['--help'])
  assert.equal(help.code, 0)
  assert.match(help.stdout, /^Usage: plant-store \[command\]\n/)
  assert.match(help.stdout, /\n {2}backup <file> {4}/)

  const unknown = await plantStore(['start'])
  assert.equal(unknown.code, 2)
  assert.match(unknown.stderr, /^plant-store: unknown command "start"\n\nUsage: plant-store/)

  const version = await plantStore(['--version'])
  assert.equal(version.code, 0)
  assert.match(version.stdout, /^plant-store \d+\.\d+\.\d+ \(commit ([0-9a-f]{40}(-dirty)?|unknown)\)\n$/)

  const token = await plantStore(['token'])
  assert.equal(token.code, 0)
  assert.match(token.stdout, /^[A-Za-z0-9_-]{43}\n$/)

  const dir = mkdtempSync(join(tmpdir(), 'plant-store-cli-'))
  const fresh = await plantStore(['check'], { DATABASE_URL: join(dir, 'plants.db') })
  assert.equal(fresh.code, 0)
  assert.match(fresh.stdout, /^plant-store check: configuration ok\n/)
  const bad = await plantStore(['check'], { DATABASE_URL: join(dir, 'plants.db'), LOG_LEVEL: 'loud' })
  assert.equal(bad.code, 1)
  assert.equal(bad.stderr,
    'plant-store: invalid configuration: LOG_LEVEL must be equal to one of the allowed values (fatal, error, warn, ' +
      'info, debug, trace, silent)\n')
})

test('<command> --help prints that command\'s help on stdout and exits 0', async () => {
  for (const command of ['token', 'check', 'backup', 'restore', 'serve']) {
    const help = await plantStore([command, '--help'])
    assert.equal(help.code, 0, command)
    assert.equal(help.stderr, '', command)
    assert.match(help.stdout, new RegExp(`^Usage: plant-store (\\[serve\\]|${command}) …\n\n {2}${command} `), command)
  }
})

test('backup - | head -c 100: the closed pipe ends the backup without a word on stderr', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-epipe-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const database = join(dir, 'plants.db')
  // Larger than a pipe's buffer, so the backup is still writing when head has gone.
  const store = createSqliteStore({ filename: database, synchronous: 'normal', checkpoint: false })
  for (let i = 0; i < 2000; i++) await store.plants.create({ name: `plant ${i} ${'x'.repeat(100)}` })
  await store.close()
  const script = `"${process.execPath}" "${SERVER_JS}" backup - 2>"${join(dir, 'stderr')}" | head -c 100 > ` +
    `"${join(dir, 'head')}"`
  const { stdout } = await promisify(execFile)('bash', ['-c', `${script}; echo "\${PIPESTATUS[0]}"`], {
    env: { PATH: process.env.PATH, API_TOKENS: TOKEN, DATABASE_URL: database }
  })
  assert.equal(readFileSync(join(dir, 'stderr'), 'utf8'), '')
  assert.equal(readFileSync(join(dir, 'head')).length, 100)
  assert.equal(stdout, '1\n', 'the backup did not complete: exit 1')
  assert.deepEqual(readdirSync(dir).sort(), ['head', 'plants.db', 'stderr'], 'no staged copy left')
})

/** POST /plants; the id when it was acknowledged (201), else undefined (never waits more than 10 s). */
function create (agent: Agent, port: number, name: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const req = request({
      agent,
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/plants',
      headers: { ...AUTH, 'content-type': 'application/json' }
    }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { body += chunk })
      res.on('end', () => resolve(res.statusCode === 201 ? /"id":(\d+)/.exec(body)?.[1] : undefined))
      res.on('error', () => resolve(undefined))
    })
    req.setTimeout(10_000, () => req.destroy())
    req.on('error', () => resolve(undefined))
    req.end(JSON.stringify({ name }))
  })
}

/** Waits (10 ms at a time, 60 s at most) until `done` holds. */
async function until (done: () => boolean): Promise<void> {
  for (let waited = 0; !done(); waited += 10) {
    assert.ok(waited < 60_000, 'waited a minute')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

test('backup under write load holds every plant acknowledged before it started; restore is ' +
  'refused while the server runs, then brings them back', { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-backup-'))
  const database = join(dir, 'plants.db')
  const backup = join(dir, 'plants.bak')
  // With `t`, a failed assertion still stops the servers and the writers: nothing keeps the file running.
  const server = await startServer(t, { env: { DATABASE_URL: database, SQLITE_SYNCHRONOUS: 'full' } })

  const agent = new Agent({ keepAlive: true, maxSockets: 8 })
  const acknowledged: string[] = []
  let writing = true
  t.after(() => {
    writing = false
    agent.destroy()
  })
  let sequence = 0
  const writer = async (): Promise<void> => {
    // `writing` is cleared by the test while the writers wait for their requests.
    // eslint-disable-next-line no-unmodified-loop-condition
    while (writing) {
      const id = await create(agent, server.port, `plant ${sequence++}`)
      if (id !== undefined) acknowledged.push(id)
    }
  }
  const writers = Promise.all(Array.from({ length: 8 }, writer))
  await until(() => acknowledged.length >= 300)

  const before = new Set(acknowledged)
  const result = await plantStore(['backup', backup], { DATABASE_URL: database })
  const countAfterBackup = acknowledged.length
  // Writes go on after the backup too, so the restore below has something to undo.
  await until(() => acknowledged.length >= countAfterBackup + 100)
  writing = false
  await writers
  agent.destroy()

  assert.equal(result.code, 0, result.stderr)
  const copy = new Database(backup, { readonly: true })
  assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok')
  const backedUp = new Set(
    (copy.prepare('SELECT id FROM plants').pluck().safeIntegers(true).all() as bigint[]).map(String))
  copy.close()
  const contents = escaped(contentsText({ plants: backedUp.size }))
  assert.match(result.stdout,
    new RegExp(`^plant-store backup: ${database} → ${backup}: ${contents}, \\d+ pages, integrity_check ok\\n$`))
  const missing = [...before].filter((id) => !backedUp.has(id))
  assert.deepEqual(missing, [], 'every plant acknowledged before the backup started is in it')
  assert.ok(backedUp.size < acknowledged.length, 'the writes after the backup are not in it')

  // Restore while the server holds the database: refused, nothing changed.
  const refused = await plantStore(['restore', '--force', backup], { DATABASE_URL: database })
  assert.equal(refused.code, 1)
  assert.equal(refused.stderr,
    `plant-store restore: ${database} is in use (a plant-store server is running on it?): stop it ` +
      'first, then restore\n')
  const total = await fetch(`${server.baseUrl}/plants?limit=1`, { headers: AUTH })
  assert.equal(total.status, 200)

  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)
  const unforced = await plantStore(['restore', backup], { DATABASE_URL: database })
  assert.equal(unforced.code, 1)
  assert.equal(unforced.stderr,
    `plant-store restore: the database ${database} exists; run restore with --force to replace it (the old file ` +
      'is kept beside it)\n')
  const restored = await plantStore(['restore', '--force', backup], { DATABASE_URL: database })
  assert.equal(restored.code, 0, restored.stderr)
  assert.match(restored.stdout, new RegExp(`^plant-store restore: ${backup} → ${database}: ${contents}, ` +
    'integrity_check ok; start the server again\n' +
    'plant-store restore: the database it replaced is kept as \\S+\\.before-restore-\\d{8}T\\d{6}Z\n$'))
  assert.equal(existsSync(`${database}-wal`), false)

  // The server starts on the restored database and serves exactly the backup's plants.
  const again = await startServer(t, { env: { DATABASE_URL: database } })
  const served = new Set<string>()
  for (let after = '0'; ;) {
    const page = await (await fetch(`${again.baseUrl}/plants?limit=100&after=${after}`,
      { headers: AUTH })).json() as Array<{ id: number }>
    for (const plant of page) served.add(String(plant.id))
    if (page.length < 100) break
    after = String(page.at(-1)?.id)
  }
  assert.deepEqual([...served].sort(), [...backedUp].sort())
  again.child.kill('SIGTERM')
  assert.equal(await again.exited, 0)
})
