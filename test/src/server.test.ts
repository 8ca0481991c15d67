import assert from 'node:assert/strict'
import { test } from 'node:test'
import { expectStartFailure, startServer } from '../helpers/server-process.js'

test('the server prints where it listens, the docs URL and a generated token that works; SIGTERM stops it cleanly', async (t) => {
  const server = await startServer(t, { env: { API_TOKENS: undefined } })
  const base = server.baseUrl
  const stdout = server.stdout()
  assert.match(stdout, new RegExp(`API docs \\(Swagger UI\\): ${base}/docs\\n`))
  const token = /accepts the bearer token\n {4}(\S+)\n/.exec(stdout)?.[1]
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
  assert.doesNotMatch(server.stdout(), /configured-token/)
  server.child.kill('SIGINT')
  assert.equal(await server.exited, 0)
})

test('a bad configuration value stops the start with a clear message and exit code 1', async () => {
  const { code, stderr } = await expectStartFailure({ env: { PORT: 'eighty' } })
  assert.equal(code, 1)
  assert.equal(stderr, 'plant-store: invalid configuration: env/PORT must be integer\n')
})
