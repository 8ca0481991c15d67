import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { TOKEN } from '../helpers/app.js'
import { scratchDatabaseUrl } from '../helpers/postgres.js'
import { startServer } from '../helpers/server-process.js'
import { startReceiver } from '../helpers/webhook-receiver.js'
import { call, callOk, subscribe, untilDeliveries } from '../helpers/webhook-http.js'
import { OTHER_AUTH, OTHER_TOKEN } from '../helpers/webhooks.js'

/**
 * One owner with five subscriptions to a receiver that never answers (each attempt holds its slot
 * for the whole WEBHOOK_TIMEOUT_MS) and a backlog; another owner with one fast receiver. The slots
 * are shared between owners: the first owner holds at most its share, half of them, and the second owner's
 * deliveries go out while every one of the first owner's attempts still hangs. With TEST_APP_STORE=postgres
 * on a fresh PostgreSQL schema.
 */

/**
 * A server with ten delivery slots and an attempt time limit far beyond the test's waits (so a hung
 * attempt never ends within it), for `tokens`; with TEST_APP_STORE=postgres on a fresh PostgreSQL schema.
 */
async function fairnessServer (t: TestContext, tokens: readonly string[]): Promise<string> {
  const database = process.env.TEST_APP_STORE === 'postgres' ? { DATABASE_URL: scratchDatabaseUrl(t).url } : {}
  const server = await startServer(t, {
    env: {
      API_TOKENS: tokens.join(','),
      WEBHOOK_ALLOW_PRIVATE_URLS: '1',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      WEBHOOK_TIMEOUT_MS: '40000',
      WEBHOOK_CONCURRENCY: '10',
      SHUTDOWN_GRACE_MS: '0',
      ...database
    }
  })
  return server.baseUrl
}

test('one owner\'s backlog to receivers that never answer does not hold another owner\'s deliveries ' +
  '(loopback receivers)', { timeout: 60_000 }, async (t) => {
  const base = await fairnessServer(t, [TOKEN, OTHER_TOKEN])
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
  assert.equal(hanging.requests.length, 5, 'the first owner holds its share, half the slots (two owners), no more')
})

/**
 * Issue 55: five owners, each with one subscription to the same receiver that accepts and never
 * answers, and a sixth owner with a healthy receiver. Each owner holds at most its share of the
 * slots (a sixth of ten: one), so the sixth owner's deliveries all go out while every hung attempt
 * is still open: none of them has ended (timed out) yet. With TEST_APP_STORE=postgres on a fresh
 * PostgreSQL schema.
 */
test('owners whose receivers hang hold their share of the slots only: another owner\'s deliveries all go out ' +
  'before any hung attempt ends', { timeout: 60_000 }, async (t) => {
  const hungTokens = Array.from({ length: 5 }, (_, i) => `hung-owner-${i}-0123456789abcdef0123456789`)
  const base = await fairnessServer(t, [TOKEN, ...hungTokens])
  const hanging = await startReceiver(t)
  hanging.respond(() => {})
  const healthy = await startReceiver(t)
  const hung: Array<{ id: number, auth: Record<string, string> }> = []
  for (const [i, token] of hungTokens.entries()) {
    const auth = { authorization: `Bearer ${token}` }
    const answer = await call(base, 'POST', '/webhooks', { url: `${hanging.origin}/owner-${i}` }, auth)
    assert.equal(answer.status, 201, answer.body)
    hung.push({ id: (JSON.parse(answer.body) as { id: number }).id, auth })
  }
  const own = await subscribe(base, `${healthy.origin}/hook`)
  // Every plant write is an event for all six: 40 deliveries to the hung receiver, 8 to the healthy one.
  for (let i = 0; i < 8; i++) await callOk(201, base, 'POST', '/plants', { name: `plant ${i}` })
  // Well within the hung attempts' time limit (the wait is only a bound for a failing run).
  await healthy.waitFor(8, 30_000)
  await untilDeliveries(base, own.id, 'the healthy owner\'s 8 deliveries are recorded as succeeded',
    (list) => list.length === 8 && list.every(({ status }) => status === 'succeeded'), 30_000)
  // The ordering: every hung attempt is still open, none has ended, and each hung owner holds one slot.
  await hanging.waitFor(5, 30_000)
  assert.equal(hanging.requests.length, 5, 'each hung owner holds its share, one slot')
  for (const { id, auth } of hung) {
    const list = await callOk<Array<{ attempts: number }>>(200, base, 'GET', `/webhooks/${id}/deliveries?limit=100`,
      undefined, auth)
    assert.equal(list.length, 8)
    assert.deepEqual(list.filter(({ attempts }) => attempts > 0), [], `no attempt of subscription ${id} has ended`)
  }
  assert.deepEqual([...new Set(hanging.requests.map(({ url }) => url))].sort(), hung.map((_, i) => `/owner-${i}`))
})
