import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { median } from '../../bench/measure.js'
import { newWebhookSecret } from '../../src/webhooks/signing.js'
import { scratchDatabaseUrl } from '../helpers/postgres.js'
import { startServer } from '../helpers/server-process.js'
import {
  startReceiver, verifyWebhook, type ReceivedRequest,
  type WebhookReceiver
} from '../helpers/webhook-receiver.js'
import { call, callOk, deliveries, subscribe, untilDeliveries, type EventBody } from '../helpers/webhook-http.js'
import type { DeliveryBody, WebhookBody } from '../helpers/webhooks.js'

const VERSION = (JSON.parse(
  readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version

interface Setup {
  base: string
  receiver: WebhookReceiver
  subscription: WebhookBody
}

/**
 * A real server (deliveries to 127.0.0.1 allowed, polling every 100 ms) and one receiver subscribed
 * to it at /hook. With TEST_APP_STORE=postgres (CI runs these tests both ways) the server is on a
 * fresh PostgreSQL schema instead of a SQLite file.
 */
async function setup (t: TestContext, env: Record<string, string> = {}): Promise<Setup> {
  const database = process.env.TEST_APP_STORE === 'postgres' ? { DATABASE_URL: scratchDatabaseUrl(t).url } : {}
  const server = await startServer(t,
    { env: { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_POLL_INTERVAL_MS: '100', ...database, ...env } })
  const receiver = await startReceiver(t)
  const subscription = await subscribe(server.baseUrl, `${receiver.origin}/hook`)
  return { base: server.baseUrl, receiver, subscription }
}

const header = (request: ReceivedRequest, name: string): string => {
  const value = request.headers[name]
  assert.equal(typeof value, 'string', name)
  return value as string
}

/**
 * Waits until the subscription's only delivery (a plant.created) has failed; asserts what else it lists is exactly
 * `outcome`.
 */
async function untilFailed (base: string, subscriptionId: number, outcome: Partial<DeliveryBody>): Promise<void> {
  const [delivery] = await untilDeliveries(base, subscriptionId, 'the delivery failed',
    (all) => all[0]?.status === 'failed')
  const { id, lastAttemptAt, createdAt, ...rest } = delivery as DeliveryBody
  assert.ok(id > 0 && lastAttemptAt !== undefined && createdAt !== undefined)
  assert.deepEqual(rest, { eventType: 'plant.created', status: 'failed', ...outcome })
}

test('deliveries end to end: Standard Webhooks headers, the plant the API answered, verified by ' +
  'standardwebhooks (prints latency)', { timeout: 60_000 }, async (t) => {
  const { base, receiver, subscription } = await setup(t)
  // When each delivery arrived, by webhook-id.
  const arrivals = new Map<string, number>()
  receiver.respond((request, res) => {
    arrivals.set(String(request.headers['webhook-id']), performance.now())
    res.writeHead(204).end()
  })

  // One write at a time, each delivered before the next: the latency of an idle service.
  const latencies: number[] = []
  const answers: Array<{ type: string, plant: unknown }> = []
  const write = async (type: string, status: number, method: string, path: string,
    body?: unknown): Promise<unknown> => {
    const sent = performance.now()
    const answer = await callOk<unknown>(status, base, method, path, body)
    answers.push({ type, plant: answer })
    const request = (await receiver.waitFor(answers.length, 10_000)).at(-1) as ReceivedRequest
    latencies.push((arrivals.get(String(request.headers['webhook-id'])) as number) - sent)
    return answer
  }
  for (let i = 0; i < 20; i++) {
    await write('plant.created', 201, 'POST', '/plants', { name: `plant ${i}`, tag: 'latency' })
  }
  const updated = await write('plant.updated', 200, 'PATCH', '/plants/1', { name: 'renamed', tag: null })
  // A deleted plant's event carries it as it was when deleted.
  const deleting = performance.now()
  await callOk(204, base, 'DELETE', '/plants/1')
  answers.push({ type: 'plant.deleted', plant: updated })
  await receiver.waitFor(answers.length, 10_000)
  latencies.push(performance.now() - deleting)

  const requests = receiver.requests
  assert.equal(requests.length, answers.length)
  const ids = new Set<string>()
  for (const [i, request] of requests.entries()) {
    assert.equal(request.method, 'POST')
    assert.equal(request.url, '/hook')
    assert.equal(request.localAddress, '127.0.0.1')
    assert.equal(header(request, 'content-type'), 'application/json')
    assert.equal(header(request, 'user-agent'), `plant-store/${VERSION}`)
    const id = header(request, 'webhook-id')
    assert.match(id, /^msg_[\w-]{22}$/)
    ids.add(id)
    const timestamp = Number(header(request, 'webhook-timestamp'))
    assert.ok(Number.isInteger(timestamp) && Math.abs(timestamp - Date.now() / 1000) < 60,
      `webhook-timestamp ${timestamp}`)
    assert.match(header(request, 'webhook-signature'), /^v1,[A-Za-z0-9+/]{43}=$/, 'one signature: no rotation')
    // The standardwebhooks package, as a receiver uses it: signature and timestamp check out.
    const event = verifyWebhook(subscription.secret, request) as EventBody
    assert.deepEqual(Object.keys(event), ['type', 'timestamp', 'data'])
    assert.equal(event.type, answers[i]?.type)
    assert.match(event.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    assert.deepEqual(event.data, answers[i]?.plant, `event ${i}: the plant as the API answered it`)
  }
  assert.equal(ids.size, requests.length, 'a webhook-id per event')
  // A forged or foreign signature does not verify.
  assert.throws(() => verifyWebhook(newWebhookSecret(), requests[0] as ReceivedRequest), /No matching signature/)

  const list = await untilDeliveries(base, subscription.id, 'every delivery recorded as succeeded',
    (all) => all.length === answers.length && all.every((delivery) => delivery.status === 'succeeded'))
  for (const delivery of list) {
    assert.deepEqual(Object.keys(delivery).sort(),
      ['attempts', 'createdAt', 'eventType', 'id', 'lastAttemptAt', 'lastStatusCode', 'status'])
    assert.deepEqual([delivery.attempts, delivery.lastStatusCode], [1, 204])
  }

  t.diagnostic(`${process.env.TEST_APP_STORE === 'postgres' ? 'PostgreSQL' : 'SQLite'} webhook latency ` +
    `(request sent → receiver), ${latencies.length} sequential writes: ` +
    `median ${median(latencies).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`)
})

test('a 500 is retried with the same webhook-id, the same body and a new timestamp and signature; the ' +
  'delivery then succeeds', { timeout: 30_000 }, async (t) => {
  // Retries at least 1040 ms apart (1300 ms ± 20 %): the timestamp, in seconds, must move on.
  const { base, receiver, subscription } = await setup(t, { WEBHOOK_RETRY_SCHEDULE: '1300,1300' })
  receiver.respond((_request, res) => { res.writeHead(receiver.requests.length === 1 ? 500 : 204).end() })
  await callOk(201, base, 'POST', '/plants', { name: 'retried' })
  const [first, second] = await receiver.waitFor(2, 10_000) as [ReceivedRequest, ReceivedRequest]
  assert.equal(header(second, 'webhook-id'), header(first, 'webhook-id'))
  assert.equal(second.body, first.body)
  assert.ok(Number(header(second, 'webhook-timestamp')) > Number(header(first, 'webhook-timestamp')), 'a new timestamp')
  assert.notEqual(header(second, 'webhook-signature'), header(first, 'webhook-signature'))
  for (const request of [first, second]) verifyWebhook(subscription.secret, request)

  const [delivery] = await untilDeliveries(base, subscription.id, 'the retry succeeded',
    (all) => all[0]?.status === 'succeeded')
  assert.deepEqual([delivery?.attempts, delivery?.lastStatusCode, delivery?.lastError], [2, 204, undefined])
  await sleep(500)
  assert.equal(receiver.requests.length, 2, 'nothing more once it succeeded')
})

test('a receiver that keeps failing: retried per WEBHOOK_RETRY_SCHEDULE, then the delivery is ' +
  'failed and left alone', { timeout: 30_000 }, async (t) => {
  const { base, receiver, subscription } = await setup(t, { WEBHOOK_RETRY_SCHEDULE: '200,200' })
  receiver.respond((_request, res) => { res.writeHead(500).end('down') })
  await callOk(201, base, 'POST', '/plants', { name: 'never delivered' })

  await untilFailed(base, subscription.id, { attempts: 3, lastStatusCode: 500, lastError: 'the receiver answered 500' })
  assert.equal(receiver.requests.length, 3, 'the first attempt and two retries')
  assert.equal(new Set(receiver.requests.map((request) => request.headers['webhook-id'])).size, 1,
    'one webhook-id on every attempt')
  await sleep(600)
  assert.equal(receiver.requests.length, 3, 'a failed delivery is not attempted again')
})

test('410 Gone disables the subscription: GET shows disabled: true and ' +
  'later events are not sent', { timeout: 30_000 }, async (t) => {
  const { base, receiver, subscription } = await setup(t)
  receiver.respond((_request, res) => { res.writeHead(410).end() })
  await callOk(201, base, 'POST', '/plants', { name: 'first' })
  await untilFailed(base, subscription.id, {
    attempts: 1,
    lastStatusCode: 410,
    lastError: 'the receiver answered 410 Gone: the subscription is disabled'
  })
  const after = await callOk<WebhookBody>(200, base, 'GET', `/webhooks/${subscription.id}`)
  assert.equal(after.disabled, true)

  await callOk(201, base, 'POST', '/plants', { name: 'second' })
  await sleep(700)
  assert.equal(receiver.requests.length, 1, 'nothing is sent to a disabled subscription')
})

test('a redirect is not followed: it counts as a failed attempt', { timeout: 30_000 }, async (t) => {
  const { base, receiver, subscription } = await setup(t, { WEBHOOK_RETRY_SCHEDULE: 'none' })
  receiver.respond((_request, res) => { res.writeHead(302, { location: `${receiver.origin}/elsewhere` }).end() })
  await callOk(201, base, 'POST', '/plants', { name: 'redirected' })
  await untilFailed(base, subscription.id, {
    attempts: 1,
    lastStatusCode: 302,
    lastError: 'the receiver answered 302, a redirect: redirects are not followed'
  })
  await sleep(300)
  assert.deepEqual(receiver.requests.map((request) => request.url), ['/hook'], 'the Location was never requested')
})

test('a receiver that never answers: the attempt ends at WEBHOOK_TIMEOUT_MS, and the retry waits ' +
  'its schedule after that', { timeout: 30_000 }, async (t) => {
  const { base, receiver, subscription } = await setup(t, { WEBHOOK_TIMEOUT_MS: '400', WEBHOOK_RETRY_SCHEDULE: '500' })
  receiver.respond(() => {}) // never answers
  await callOk(201, base, 'POST', '/plants', { name: 'unanswered' })
  await untilFailed(base, subscription.id, { attempts: 2, lastError: 'timeout: no answer within 400 ms' })
  assert.equal(receiver.requests.length, 2)
  // When each attempt started, as the service logged it: arrival times at the receiver would also
  // carry each request's way there, which a busy machine can lengthen for the first and not the retry.
  const [delivery] = await deliveries(base, subscription.id)
  const { attemptLog } = await callOk<{ attemptLog: Array<{ at: string, durationMs: number }> }>(
    200, base, 'GET', `/webhooks/${subscription.id}/deliveries/${delivery?.id}`)
  const [first, retry] = attemptLog.map(({ at, durationMs }) => ({ at: Date.parse(at), durationMs }))
  assert.ok(first !== undefined && retry !== undefined && attemptLog.length === 2)
  assert.ok(first.durationMs >= 399, `the first attempt ended after ${first.durationMs} ms`)
  // The first attempt's 400 ms, then a wait of at least 400 ms (500 ms - 20 %) before the retry
  // (less 2 ms: the timestamps are whole milliseconds of two clocks).
  const gap = retry.at - first.at
  assert.ok(gap >= 798, `the retry came ${gap} ms after the first attempt began`)
})

test('writes that are refused, replayed or change nothing emit nothing: 400, 404, 409, 412, 422, a replay, PATCH ' +
  '{}, an identical PUT', { timeout: 30_000 }, async (t) => {
  const { base, receiver, subscription } = await setup(t)
  const plant = await callOk<{ id: number }>(201, base, 'POST', '/plants', { id: 5, name: 'chosen' })
  const refused: Array<[number, string, string, unknown?, Record<string, string>?]> = [
    [409, 'POST', '/plants', { id: 5, name: 'again' }],
    [400, 'POST', '/plants', { name: '' }],
    [412, 'PUT', `/plants/${plant.id}`, { name: 'stale' }, { 'if-match': '"stale"' }],
    [412, 'PATCH', `/plants/${plant.id}`, { name: 'stale' }, { 'if-match': '"stale"' }],
    [412, 'DELETE', `/plants/${plant.id}`, undefined, { 'if-match': '"stale"' }],
    [404, 'PATCH', '/plants/999', { name: 'missing' }],
    [404, 'DELETE', '/plants/999']
  ]
  for (const [status, method, path, body, headers] of refused) await callOk(status, base, method, path, body, headers)
  const once = { 'idempotency-key': 'create-once' }
  const first = await call(base, 'POST', '/plants', { name: 'once' }, once)
  assert.equal(first.status, 201)
  const replay = await call(base, 'POST', '/plants', { name: 'once' }, once)
  assert.deepEqual([replay.status, replay.body, replay.headers.get('idempotent-replayed')], [201, first.body, 'true'])
  await callOk(422, base, 'POST', '/plants', { name: 'another body' }, once)
  // Writes that change nothing: 200 with the plant, the same ETag, no event.
  const unchanged = await call(base, 'GET', `/plants/${plant.id}`)
  for (const [method, body] of [['PATCH', {}], ['PUT', { name: 'chosen' }],
    ['PATCH', { name: 'chosen', tag: null }]] as const) {
    const answer = await call(base, method, `/plants/${plant.id}`, body)
    assert.deepEqual([answer.status, answer.body, answer.headers.get('etag')],
      [200, unchanged.body, unchanged.headers.get('etag')])
  }
  // The last write: once it is delivered, whatever the refusals had emitted would be there too.
  await callOk(201, base, 'POST', '/plants', { name: 'last' })

  const list = await untilDeliveries(base, subscription.id, 'three deliveries succeeded',
    (all) => all.length >= 3 && all.every((delivery) => delivery.status === 'succeeded'))
  await sleep(300)
  assert.equal((await deliveries(base, subscription.id)).length, 3, 'one delivery per event that happened: no more')
  assert.deepEqual(list.map((delivery) => delivery.eventType), ['plant.created', 'plant.created', 'plant.created'])
  const names = receiver.requests.map(
    (request) => (verifyWebhook(subscription.secret, request) as EventBody).data.name).sort()
  assert.deepEqual(names, ['chosen', 'last', 'once'])
})

test('after a secret rotation every delivery carries two signatures: receivers with the old or the ' +
  'new secret both verify', { timeout: 30_000 }, async (t) => {
  const { base, receiver, subscription } = await setup(t)
  await callOk(201, base, 'POST', '/plants', { name: 'before' })
  const [before] = await receiver.waitFor(1) as [ReceivedRequest]
  verifyWebhook(subscription.secret, before)

  const rotated = await callOk<WebhookBody>(200, base, 'POST', `/webhooks/${subscription.id}/rotate-secret`)
  assert.match(rotated.secret, /^whsec_/)
  assert.notEqual(rotated.secret, subscription.secret)
  assert.deepEqual(await callOk(200, base, 'GET', `/webhooks/${subscription.id}/secret`), { secret: rotated.secret })
  assert.equal('secret' in await callOk<object>(200, base, 'GET', `/webhooks/${subscription.id}`), false)

  await callOk(201, base, 'POST', '/plants', { name: 'after' })
  const [, after] = await receiver.waitFor(2) as [ReceivedRequest, ReceivedRequest]
  const signatures = header(after, 'webhook-signature').split(' ')
  assert.equal(signatures.length, 2)
  for (const signature of signatures) assert.match(signature, /^v1,[A-Za-z0-9+/]{43}=$/)
  for (const secret of [rotated.secret, subscription.secret]) {
    assert.equal((verifyWebhook(secret, after) as EventBody).data.name, 'after')
  }
  assert.throws(() => verifyWebhook(newWebhookSecret(), after), /No matching signature/)
})
