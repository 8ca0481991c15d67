import assert from 'node:assert/strict'
import { createServer, type AddressInfo } from 'node:net'
import { describe, test, type TestContext } from 'node:test'
import { AUTH } from '../helpers/app.js'
import { scratchDatabaseUrl, TEST_DATABASE_URL } from '../helpers/postgres.js'
import { expectStartFailure, fatalMessage, startServer } from '../helpers/server-process.js'

/** Starts a real server process on port 0 and resolves with its base URL; stopped when the test ends. */
async function startInstance (t: TestContext, databaseUrl: string): Promise<string> {
  const server = await startServer(t, { env: { DATABASE_URL: databaseUrl, PG_POOL_MAX: '4' } })
  t.after(async () => { assert.equal(await server.stop(), 0, 'the instance stops cleanly') })
  return server.baseUrl
}

interface Answer {
  status: number
  body: string
  etag: string | null
  replayed: string | null
}

async function call (base: string, method: string, path: string, body?: unknown,
  headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...AUTH, ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
    ...(body !== undefined && { body: JSON.stringify(body) })
  })
  return {
    status: res.status,
    body: await res.text(),
    etag: res.headers.get('etag'),
    replayed: res.headers.get('idempotent-replayed')
  }
}

const count = (answers: Answer[], status: number): number => answers.filter((answer) => answer.status === status).length

// Two stateless instances on one PostgreSQL schema behave as one service.
if (TEST_DATABASE_URL !== undefined) {
  describe('two instances on one PostgreSQL database', () => {
    const twoInstances = async (t: TestContext): Promise<[string, string]> => {
      const { url } = scratchDatabaseUrl(t)
      // Started together on an empty schema: the migrations run once, under the advisory lock.
      const [a, b] = await Promise.all([startInstance(t, url), startInstance(t, url)])
      return [a, b]
    }

    test('concurrent deletes of the same ids spread across both: exactly one 204 per id', async (t) => {
      const [a, b] = await twoInstances(t)
      const ids: number[] = []
      for (let i = 0; i < 15; i++) {
        ids.push(JSON.parse((await call(i % 2 === 0 ? a : b, 'POST', '/plants', { name: `p${i}` })).body).id)
      }
      const answers = await Promise.all(ids.flatMap((id) =>
        [a, b, a, b, a, b].map(async (base) => ({ id, answer: await call(base, 'DELETE', `/plants/${id}`) }))))
      for (const id of ids) {
        const mine = answers.filter((entry) => entry.id === id).map((entry) => entry.answer)
        assert.equal(count(mine, 204), 1, `id ${id}`)
        assert.equal(count(mine, 404), 5, `id ${id}`)
      }
      assert.equal((await call(b, 'GET', '/plants')).body, '[]')
    })

    test('concurrent creates with client-chosen ids across both: exactly one 201 per id, the rest 409', async (t) => {
      const [a, b] = await twoInstances(t)
      const ids = Array.from({ length: 15 }, (_, i) => 1000 + i)
      const answers = await Promise.all(ids.flatMap((id) =>
        [a, b, a, b, a, b].map(
          async (base, n) => ({ id, answer: await call(base, 'POST', '/plants', { id, name: `racer ${n}` }) }))))
      for (const id of ids) {
        const mine = answers.filter((entry) => entry.id === id).map((entry) => entry.answer)
        assert.equal(count(mine, 201), 1, `id ${id}`)
        assert.equal(count(mine, 409), 5, `id ${id}`)
        const winner = mine.find((answer) => answer.status === 201)
        for (const base of [a, b]) assert.equal((await call(base, 'GET', `/plants/${id}`)).body, winner?.body)
      }
      // The server's own ids are not pushed up by the chosen ones, whichever instance generates them.
      assert.equal(JSON.parse((await call(a, 'POST', '/plants', { name: 'next' })).body).id, 1)
      assert.equal(JSON.parse((await call(b, 'POST', '/plants', { name: 'after' })).body).id, 2)
    })

    test('every acknowledged write is visible from the other instance at once', async (t) => {
      const [a, b] = await twoInstances(t)
      const created = await call(a, 'POST', '/plants', { name: 'shared', tag: 'x' })
      assert.equal(created.status, 201)
      const id = JSON.parse(created.body).id as number
      const seen = await call(b, 'GET', `/plants/${id}`)
      assert.deepEqual([seen.status, seen.body, seen.etag], [200, created.body, created.etag])

      const replaced = await call(b, 'PUT', `/plants/${id}`, { name: 'replaced' }, { 'if-match': String(created.etag) })
      assert.equal(replaced.status, 200)
      assert.equal((await call(a, 'GET', `/plants/${id}`)).body, replaced.body)
      assert.equal(
        (await call(a, 'PUT', `/plants/${id}`, { name: 'stale' }, { 'if-match': String(created.etag) })).status, 412)

      const patched = await call(a, 'PATCH', `/plants/${id}`, { tag: 'y' })
      assert.equal(patched.status, 200)
      assert.equal((await call(b, 'GET', `/plants/${id}`)).etag, patched.etag)
      assert.equal((await call(b, 'GET', '/plants?tag=y')).body, `[${patched.body}]`)

      const first = await call(a, 'POST', '/plants', { name: 'once' }, { 'idempotency-key': 'shared-key' })
      const retry = await call(b, 'POST', '/plants', { name: 'once' }, { 'idempotency-key': 'shared-key' })
      assert.deepEqual([retry.status, retry.body, retry.replayed], [201, first.body, 'true'])

      assert.equal((await call(b, 'DELETE', `/plants/${id}`)).status, 204)
      assert.equal((await call(a, 'GET', `/plants/${id}`)).status, 404)
      assert.equal((await call(a, 'DELETE', `/plants/${id}`)).status, 404)
    })
  })
}

test('an instance that cannot reach PostgreSQL at start-up exits 1 with a clear message and no password', async () => {
  // A port that was free a moment ago: nothing listens there.
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  const {
    code, stdout,
    stderr
  } = await expectStartFailure(
    {
      env: {
        LOG_LEVEL: 'warn',
        PG_STARTUP_TIMEOUT_MS: '0',
        DATABASE_URL: `postgres://postgres:s3cret-pw@127.0.0.1:${port}/test`
      }
    })
  const output = stdout + stderr
  assert.equal(code, 1)
  const reason = `connect ECONNREFUSED 127\\.0\\.0\\.1:${port}; nothing listens there: start PostgreSQL \\(or its ` +
    'pooler\\), or correct the host and port in DATABASE_URL'
  assert.match(fatalMessage(stderr), new RegExp(`^cannot use the PostgreSQL database: ${reason}; nothing was changed$`))
  // The log says it too, as its one line.
  const lines = stdout.split('\n').filter((line) => line !== '').map(
    (line) => JSON.parse(line) as { msg: string, err?: { message: string, code?: string } })
  assert.deepEqual(lines.map((line) => [line.msg, line.err?.code]),
    [['cannot use the PostgreSQL database', 'ECONNREFUSED']])
  assert.match(lines[0]?.err?.message ?? '', new RegExp(`^${reason}$`))
  assert.doesNotMatch(output, /s3cret-pw/)
})
