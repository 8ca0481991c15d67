import assert from 'node:assert/strict'
import { test } from 'node:test'
import { expectStartFailure, startServer } from '../helpers/server-process.js'

test('the server prints where it listens, the docs URL and a generated token that works, on stderr; SIGTERM stops it cleanly', async (t) => {
  const server = await startServer(t, { env: { API_TOKENS: undefined } })
  const base = server.baseUrl
  const stderr = server.stderr()
  assert.match(stderr, new RegExp(`API docs \\(Swagger UI\\): ${base}/docs\\n`))
  const token = /accepts the bearer token\n {4}(\S+)\n/.exec(stderr)?.[1]
  assert.ok(token !== undefined)

  const authorized = await fetch(`${base}/plants/1`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })
  assert.equal(authorized.status, 404)
  const health = await fetch(`${base}/health`)
  assert.deepEqual(await health.json(), { status: 'ok' })

  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)
})

test('configured tokens are not printed', async (t) => {
  const token = 'configured-token-0123456789abcdef0123'
  const server = await startServer(t, { env: { DATABASE_URL: ':memory:', API_TOKENS: token } })
  assert.doesNotMatch(server.stdout() + server.stderr(), /configured-token/)
  server.child.kill('SIGINT')
  assert.equal(await server.exited, 0)
})

test('a bad configuration value stops the start with a clear message and exit code 1', async () => {
  const { code, stderr } = await expectStartFailure({ env: { PORT: 'eighty' } })
  assert.equal(code, 1)
  assert.equal(stderr, 'plant-store: invalid configuration: PORT must be integer\n')
})

test('stdout carries JSON lines only (not a terminal, LOG_FORMAT unset): the banner is on stderr', async (t) => {
  const server = await startServer(t, { env: { LOG_LEVEL: 'info', METRICS_PORT: '0' } })
  assert.equal((await fetch(`${server.baseUrl}/health`)).status, 200)
  await server.waitForLog((line) => line.msg === 'request completed')
  assert.equal(await server.stop(), 0)
  const lines = server.stdout().split('\n')
  assert.equal(lines.pop(), '', 'the last line is complete')
  assert.ok(lines.length >= 4, server.stdout())
  for (const line of lines) assert.equal(typeof (JSON.parse(line) as { msg?: unknown }).msg, 'string', line)
  assert.match(server.stderr(), /^\nplant-store is listening on http:\/\/127\.0\.0\.1:\d+\n {2}API docs/)
  assert.match(server.stderr(), /\n {2}Prometheus metrics: {4}http:\/\/127\.0\.0\.1:\d+\/metrics\n/)
})

test('LOG_FORMAT=pretty writes lines for a person (no JSON); LOG_FORMAT=json is the default off a terminal', async (t) => {
  const server = await startServer(t, { env: { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' } })
  assert.equal((await fetch(`${server.baseUrl}/health`)).status, 200)
  assert.equal(await server.stop(), 0)
  const stdout = server.stdout()
  assert.match(stdout, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: request completed\n/m)
  assert.match(stdout, /^ {4}route: "\/health"$/m)
  assert.match(stdout, /INFO: stopped: database checkpointed and closed\n/)
  for (const line of stdout.split('\n')) assert.ok(!line.startsWith('{'), line)
})
