import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { TOKEN } from '../../helpers/app.js'
import {
  bannerLine, expectStartFailure, fatalMessage, logLines, SERVER_JS,
  startServer
} from '../../helpers/server-process.js'

test('at a terminal with no token setting, the server shows where it listens, the docs URL and ' +
  'a made-up token that works', async (t) => {
  const server = await startServer(t, { terminal: true, env: { API_TOKENS: undefined } })
  const base = server.baseUrl
  const shown = server.stdout()
  assert.match(shown, new RegExp(`API docs \\(Swagger UI\\): ${base}/docs\\n`))
  const token = /accepts the bearer token\n {4}(\S+)\n/.exec(shown)?.[1]
  assert.ok(token !== undefined, shown)

  const authorized = await fetch(`${base}/plants/1`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token}` }
  })
  assert.equal(authorized.status, 404)
  const health = await fetch(`${base}/health`)
  assert.deepEqual(await health.json(), { status: 'ok' })
})

test('off a terminal, no token setting stops the start naming the settings: no token is made ' +
  'up, none is logged', async () => {
  const message = 'invalid configuration: no API_TOKENS, API_TOKENS_FILE or OIDC_ISSUER is set, so ' +
    'nothing could call the API ' +
    '(a token is made up for a trial run only at a terminal; plant-store token prints one)'
  for (const env of [{ API_TOKENS: undefined }, { API_TOKENS: undefined, LOG_FORMAT: 'pretty' }, {
    API_TOKENS: undefined,
    LOG_FORMAT: 'json',
    LOG_LEVEL: 'trace'
  }]) {
    const { code, stdout, stderr } = await expectStartFailure({ env })
    assert.equal(code, 1)
    assert.equal(stdout, '')
    assert.equal(env.LOG_FORMAT === 'pretty' ? stderr : fatalMessage(stderr),
      env.LOG_FORMAT === 'pretty' ? `plant-store: ${message}\n` : message)
  }
})

test('a token setting set but empty stops the start naming it, at a terminal too, and check refuses it', async () => {
  for (const [setting, value] of [['API_TOKENS', ''], ['API_TOKENS', '   '], ['API_TOKENS_FILE', ''],
    ['API_TOKENS_FILE', ' ']] as const) {
    const message = `invalid configuration: ${setting} is set but holds no token (unset it to have none)`
    const {
      code, stdout,
      stderr
    } = await expectStartFailure({ env: { API_TOKENS: undefined, [setting]: value, LOG_LEVEL: 'info' } })
    assert.deepEqual({ code, stdout, message: fatalMessage(stderr) }, { code: 1, stdout: '', message },
      `${setting}=${value}`)
    const terminal = await expectStartFailure({ terminal: true, env: { API_TOKENS: undefined, [setting]: value } })
    assert.deepEqual({ code: terminal.code, stdout: terminal.stdout }, { code: 1, stdout: `plant-store: ${message}\n` })
    const check = await promisify(execFile)(process.execPath, [SERVER_JS, 'check'],
      { env: { PATH: process.env.PATH, [setting]: value } })
      .then(() => undefined, (err: { code: number, stdout: string, stderr: string }) => err)
    assert.deepEqual({ code: check?.code, stdout: check?.stdout, stderr: check?.stderr },
      { code: 1, stdout: '', stderr: `plant-store: ${message}\n` })
  }
})

test('check: no token setting is refused off a terminal, and at a terminal it says serve makes ' +
  'one up there', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-check-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const env = { PATH: process.env.PATH, DATABASE_URL: join(dir, 'plants.db') }
  const off = await promisify(execFile)(process.execPath, [SERVER_JS, 'check'], { env })
    .then(() => undefined, (err: { code: number, stdout: string, stderr: string }) => err)
  assert.equal(off?.code, 1)
  assert.match(String(off?.stderr),
    /^plant-store: invalid configuration: no API_TOKENS, API_TOKENS_FILE or OIDC_ISSUER is set/)
  const at = await promisify(execFile)('script',
    ['--quiet', '--return', '--command', `stty -onlcr; exec '${process.execPath}' '${SERVER_JS}' check`, '/dev/null'],
    { env })
  assert.equal(at.stdout, 'plant-store check: configuration ok\n' +
    'plant-store check: no API_TOKENS, API_TOKENS_FILE or OIDC_ISSUER: serve makes up a token for a trial run at ' +
      'this terminal only\n' +
    `plant-store check: database ${join(dir, 'plants.db')} does not exist yet; the first start creates it\n`)
})

test('configured tokens are not printed', async (t) => {
  const token = 'configured-token-0123456789abcdef0123'
  const server = await startServer(t, { env: { DATABASE_URL: ':memory:', API_TOKENS: token } })
  assert.doesNotMatch(server.stdout() + server.stderr(), /configured-token/)
  server.child.kill('SIGINT')
  assert.equal(await server.exited, 0)
})

test('a bad configuration value stops the start with a clear message and exit code 1', async () => {
  const { code, stdout, stderr } = await expectStartFailure({ env: { PORT: 'eighty', LOG_FORMAT: 'pretty' } })
  assert.equal(code, 1)
  assert.equal(stderr, 'plant-store: invalid configuration: PORT must be integer\n')
  assert.equal(stdout, '')
  // Off a terminal (LOG_FORMAT unset), the same message is a JSON log line.
  const json = await expectStartFailure({ env: { PORT: 'eighty' } })
  assert.equal(json.code, 1)
  assert.deepEqual(logLines(json.stderr).map(({ level, msg }) => ({ level, msg })),
    [{ level: 60, msg: 'invalid configuration: PORT must be integer' }])
  assert.equal(json.stdout, '')
})

test('JSON logs end to end (not a terminal, LOG_FORMAT unset): every line of both streams, from ' +
  'start to exit, is a JSON log line', async (t) => {
  const server = await startServer(t, { env: { LOG_LEVEL: 'info', METRICS_PORT: '0' } })
  const base = server.baseUrl
  const banner = bannerLine(server.stdout())
  assert.ok(banner !== undefined)
  const res = await fetch(`${base}/plants/1`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}` } })
  assert.equal(res.status, 404)
  await server.waitForLog((line) => line.msg === 'request completed')
  assert.equal(await server.stop(), 0)
  const lines = logLines(server.stdout())
  assert.ok(lines.length >= 4, server.stdout())
  for (const line of lines) assert.equal(typeof line.msg, 'string', JSON.stringify(line))
  assert.equal(server.stderr(), '')
  const { time, pid, hostname, ...fields } = banner
  assert.deepEqual([typeof time, typeof pid, typeof hostname], ['number', 'number', 'string'])
  assert.deepEqual(fields, {
    level: 30,
    msg: `plant-store is listening on ${base}`,
    url: base,
    docs: `${base}/docs`,
    openapi: `${base}/openapi.json`,
    metrics: banner.metrics
  })
  assert.match(String(banner.metrics), /^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
})

test('JSON logs end to end: a crash is one fatal JSON line on stderr, with its stack, and exit 1', async (t) => {
  // A bug thrown outside every handler, on demand: a signal listener that throws.
  const crashOnSignal = "data:text/javascript,process.on('SIGUSR2', () => { throw new TypeError('a bug') })"
  const server = await startServer(t, { nodeArgs: ['--import', crashOnSignal] })
  server.child.kill('SIGUSR2')
  assert.equal(await server.exited, 1)
  for (const line of logLines(server.stdout())) assert.equal(typeof line.msg, 'string', JSON.stringify(line))
  const [crash, ...more] = logLines(server.stderr())
  assert.equal(more.length, 0, server.stderr())
  const { time, pid, hostname, err, ...fields } = crash ?? {}
  assert.deepEqual([typeof time, typeof pid, typeof hostname], ['number', 'number', 'string'])
  assert.deepEqual(fields, { level: 60, msg: 'crashed: a bug' })
  assert.deepEqual({ ...(err as Record<string, unknown>), stack: undefined },
    { type: 'TypeError', message: 'a bug', stack: undefined })
  assert.match(String((err as { stack?: unknown }).stack), /^TypeError: a bug\n {4}at /)
})

test('LOG_FORMAT=pretty writes lines for a person (no JSON); LOG_FORMAT=json is the default off ' +
  'a terminal', async (t) => {
  const server = await startServer(t, { env: { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' } })
  assert.equal((await fetch(`${server.baseUrl}/health`)).status, 200)
  assert.equal(await server.stop(), 0)
  const stdout = server.stdout()
  assert.match(stdout, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: request completed\n/m)
  assert.match(stdout, /^ {4}route: "\/health"$/m)
  assert.match(stdout, /INFO: stopped: database checkpointed and closed\n/)
  for (const line of stdout.split('\n')) assert.ok(!line.startsWith('{'), line)
})

test('the commands other than serve never load Fastify: only serve imports the app', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-cli-modules-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  // Preloaded into the process: at its exit, the files it loaded from node_modules, by package path.
  const hook = join(dir, 'loaded.cjs')
  const file = join(dir, 'loaded.txt')
  writeFileSync(hook, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(file)},
    Object.keys(require.cache).map((name) => name.split('node_modules/').slice(1).join('node_modules/')).join('\\n')))`)
  const fastifyFilesLoadedBy = async (script: string, args: string[]): Promise<number> => {
    await promisify(execFile)(process.execPath, ['--require', hook, script, ...args], {
      env: { PATH: process.env.PATH, DATABASE_URL: join(dir, 'plants.db'), API_TOKENS: TOKEN }
    })
    return readFileSync(file, 'utf8').split('\n').filter((name) => name.startsWith('fastify/')).length
  }
  await createSqliteStore({ filename: join(dir, 'plants.db'), checkpoint: false }).close()
  for (const args of [['--help'], ['token'], ['check'], ['backup', join(dir, 'backup.db')]]) {
    assert.equal(await fastifyFilesLoadedBy(SERVER_JS, args), 0, args.join(' '))
  }
  // The hook sees Fastify where it is loaded: importing the app (what serve does) loads it.
  assert.ok(await fastifyFilesLoadedBy(join(dirname(SERVER_JS), 'app.js'), []) > 0)
})

test('DATABASE_URL of a scheme it does not take (file:, sqlite:, postgres:/): serve and check ' +
  'refuse it naming the setting, no file is made', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-database-url-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const run = async (args: string[],
    env: Record<string, string>) => await promisify(execFile)(process.execPath, [SERVER_JS, ...args],
    { cwd: dir, env: { PATH: process.env.PATH ?? '', API_TOKENS: TOKEN, PORT: '0', ...env } })
    .then(() => undefined,
      ({ code, stdout, stderr }: { code: number, stdout: string, stderr: string }) => ({ code, stdout, stderr }))
  for (const [url, scheme] of [['file:/plants.db', 'file'], ['sqlite:///plants.db', 'sqlite'],
    ['postgres:/x', 'postgres']] as const) {
    const message = `invalid configuration: DATABASE_URL starts with ${scheme}:, a form it does not ` +
      'take: a SQLite file path ' +
      '(data/plants.db, /var/lib/plant-store/plants.db; ./ before a name holding a colon), :memory:, or a ' +
        'postgres:// or postgresql:// URL'
    assert.deepEqual(await run(['check'], { DATABASE_URL: url }),
      { code: 1, stdout: '', stderr: `plant-store: ${message}\n` })
    const served = await run([], { DATABASE_URL: url })
    assert.deepEqual({ code: served?.code, stdout: served?.stdout, message: fatalMessage(served?.stderr ?? '') },
      { code: 1, stdout: '', message })
  }
  assert.deepEqual(readdirSync(dir), [], 'nothing made under the working directory')
})
