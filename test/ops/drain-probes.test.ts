import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { AUTH } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'

test('SIGTERM: /health/ready answers 503 at once, /health/live 200, and the API keeps serving through ' +
  'SHUTDOWN_DELAY_MS; then it drains and exits 0', { timeout: 30_000 }, async () => {
  const server = await startServer(undefined, {
    env: {
      DATABASE_URL: join(mkdtempSync(join(tmpdir(), 'plant-store-drain-')), 'plants.db'),
      LOG_LEVEL: 'info',
      // Long enough that every request below lands inside the delay on any machine.
      SHUTDOWN_DELAY_MS: '4000'
    }
  })
  assert.equal((await fetch(`${server.baseUrl}/health/ready`)).status, 200)

  server.child.kill('SIGTERM')
  await server.waitForLog((line) => line.msg === 'shutting down: not ready, still serving until the delay is over')

  const ready = await fetch(`${server.baseUrl}/health/ready`)
  assert.equal(ready.status, 503)
  assert.equal(ready.headers.get('retry-after'), '5')
  assert.equal(ready.headers.get('content-type'), 'application/json; charset=utf-8')
  assert.deepEqual(await ready.json(), { error: 503, message: 'Not ready: the service is shutting down' })

  const live = await fetch(`${server.baseUrl}/health/live`)
  assert.equal(live.status, 200)
  assert.deepEqual(await live.json(), { status: 'ok' })

  // Traffic a balancer still sends during the delay is served, not refused.
  const created = await fetch(`${server.baseUrl}/plants`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: '{"name":"late"}'
  })
  assert.equal(created.status, 201)
  assert.equal((await fetch(`${server.baseUrl}/health`)).status, 200)

  assert.equal(await server.exited, 0)
})
