import assert from 'node:assert/strict'
import { test } from 'node:test'
import { TOKEN } from '../helpers/app.js'
import { scratchDatabaseUrl } from '../helpers/postgres.js'
import { startServer } from '../helpers/server-process.js'
import { startReceiver } from '../helpers/webhook-receiver.js'
import { callOk, subscribe } from '../helpers/webhook-http.js'
import { OTHER_AUTH, OTHER_TOKEN } from '../helpers/webhooks.js'

/**
 * One owner with five subscriptions to a receiver that never answers (each attempt holds its slot
 * for the whole WEBHOOK_TIMEOUT_MS) and a backlog; another owner with one fast receiver. The slots
 * are shared between owners: the first owner holds at most half of them, and the second owner's
 * deliveries go out while every one of the first owner's attempts still hangs. With TEST_APP_STORE=postgres
 * on a fresh PostgreSQL schema.
 */
test('one owner\'s backlog to receivers that never answer does not hold another owner\'s deliveries (loopback receivers)', { timeout: 60_000 }, async (t) => {
  const database = process.env.TEST_APP_STORE === 'postgres' ? { DATABASE_URL: scratchDatabaseUrl(t).url } : {}
  const server = await startServer(t, {
    env: {
      API_TOKENS: `${TOKEN},${OTHER_TOKEN}`,
      WEBHOOK_ALLOW_PRIVATE_URLS: '1',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      WEBHOOK_TIMEOUT_MS: '40000',
      WEBHOOK_CONCURRENCY: '10',
      SHUTDOWN_GRACE_MS: '0',
      ...database
    }
  })
  const base = server.baseUrl
  const hanging = await startReceiver(t)
  hanging.respond(() => {})
  const fast = await startReceiver(t)
  for (let i = 0; i < 5; i++) await subscribe(base, `${hanging.origin}/hook-${i}`)
  const answer = await fetch(`${base}/webhooks`, {
    method: 'POST',
    headers: { ...OTHER_AUTH, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${fast.origin}/hook` })
  })
  assert.equal(answer.status, 201)
  // Every plant write is an event for all six subscriptions: 50 deliveries that hang, 10 that do not.
  for (let i = 0; i < 10; i++) await callOk(201, base, 'POST', '/plants', { name: `plant ${i}` })
  // Well within the hanging attempts' time limit: without fair shares they would hold every slot until then.
  await fast.waitFor(10, 15_000)
  assert.equal(hanging.requests.length, 5, 'the first owner holds half the slots, no more')
})
