import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH } from '../../../helpers/app.js'
import { assertError, createPlant, JSON_TYPE } from '../../../helpers/plants.js'
import { startReceiver } from '../../../helpers/webhook-receiver.js'
import {
  buildWebhooksApp, createWebhook, deliveriesWhen, OTHER_AUTH,
  type DeliveryBody
} from '../../../helpers/webhooks.js'
import { PLANT_CREATED, PLANT_DELETED } from '../../../helpers/resources.js'

interface DetailBody extends DeliveryBody {
  webhookId: string
  payload: string
  attemptLog: Array<{ at: string, durationMs: number, statusCode?: number, error?: string, responseBody?: string }>
}

const getDelivery = (app: FastifyInstance, id: number | string, deliveryId: number | string,
  headers: Record<string, string> = AUTH) =>
  app.inject({ url: `/webhooks/${id}/deliveries/${deliveryId}`, headers })

test('a delivery with its event as sent and every attempt: status or error, duration, the first 1 KiB of ' +
  'the answer (receiver on 127.0.0.1)', async (t) => {
  const receiver = await startReceiver(t)
  const long = 'é'.repeat(600)
  let answers = 0
  receiver.respond((_request, res) => {
    answers++
    if (answers === 1) res.writeHead(503, { 'content-type': 'text/plain' }).end(long)
    else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
  })
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_RETRY_SCHEDULE: '1' })
  const subscription = await createWebhook(app, { url: `${receiver.origin}/hooks` })
  const plant = await createPlant(app, { name: 'Fern' })
  const [delivery] = await deliveriesWhen(app, subscription.id, ([first]) => first?.status === 'succeeded')
  assert.ok(delivery !== undefined)
  const res = await getDelivery(app, subscription.id, delivery.id)
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  const detail = res.json<DetailBody>()
  const [first, second] = receiver.requests
  assert.ok(first !== undefined && second !== undefined)
  const { webhookId, payload, attemptLog, ...rest } = detail
  assert.deepEqual(rest, delivery)
  assert.equal(webhookId, first.headers['webhook-id'])
  assert.equal(payload, first.body)
  assert.equal(payload, second.body)
  assert.deepEqual(JSON.parse(payload), { type: PLANT_CREATED, timestamp: plant.plant.createdAt, data: plant.plant })
  assert.equal(attemptLog.length, 2)
  const [failed, succeeded] = attemptLog
  assert.ok(failed !== undefined && succeeded !== undefined)
  // 1024 bytes of two-byte characters: 512 of them.
  assert.deepEqual({ ...failed, at: '', durationMs: 0 }, {
    at: '',
    durationMs: 0,
    statusCode: 503,
    error: 'the receiver answered 503',
    responseBody: 'é'.repeat(512)
  })
  assert.deepEqual({ ...succeeded, at: '', durationMs: 0 }, {
    at: '',
    durationMs: 0,
    statusCode: 200,
    responseBody: '{"ok":true}'
  })
  assert.equal(succeeded.at, delivery.lastAttemptAt)
  assert.ok(failed.at <= succeeded.at && failed.durationMs >= 0 && Number.isInteger(succeeded.durationMs))
})

test('a delivery that got no answer: the error, no status code and no body', async (t) => {
  const receiver = await startReceiver(t)
  const origin = receiver.origin
  await receiver.close()
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_RETRY_SCHEDULE: 'none' })
  await createWebhook(app, { url: `${origin}/hooks` })
  await createPlant(app, { name: 'Fern' })
  const [delivery] = await deliveriesWhen(app, 1, ([first]) => first?.status === 'failed')
  const detail = (await getDelivery(app, 1, delivery?.id ?? 0)).json<DetailBody>()
  assert.equal(detail.attemptLog.length, 1)
  assert.deepEqual(Object.keys(detail.attemptLog[0] ?? {}).sort(), ['at', 'durationMs', 'error'])
  assert.match(detail.attemptLog[0]?.error ?? '', /^connection: .*ECONNREFUSED/)
})

test('the list filters by status and eventType, and its Link keeps the filters', async (t) => {
  const receiver = await startReceiver(t)
  receiver.respond((request, res) => { res.writeHead(request.body.includes(`"${PLANT_DELETED}"`) ? 500 : 204).end() })
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_RETRY_SCHEDULE: 'none' })
  await createWebhook(app, { url: `${receiver.origin}/hooks` })
  for (const name of ['a', 'b', 'c']) await createPlant(app, { name })
  await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  await deliveriesWhen(app, 1, (all) => all.length === 4 && all.every((delivery) => delivery.status !== 'pending'))
  const list = async (query: string): Promise<{ kinds: string[], link: string | undefined }> => {
    const res = await app.inject({ url: `/webhooks/1/deliveries${query}`, headers: AUTH })
    assert.equal(res.statusCode, 200, res.body)
    return {
      kinds: res.json<DeliveryBody[]>().map((delivery) => `${delivery.eventType} ${delivery.status}`),
      link: res.headers.link as string | undefined
    }
  }
  assert.deepEqual((await list('?status=failed')).kinds, [`${PLANT_DELETED} failed`])
  assert.deepEqual((await list(`?eventType=${PLANT_CREATED}&status=failed`)).kinds, [])
  const page = await list(`?eventType=${PLANT_CREATED}&limit=2`)
  assert.deepEqual(page.kinds, [`${PLANT_CREATED} succeeded`, `${PLANT_CREATED} succeeded`])
  assert.match(page.link ?? '',
    /^<\/webhooks\/1\/deliveries\?limit=2&eventType=plant\.created&before=\d+>; rel="next"$/)
  assertError(await app.inject({ url: '/webhooks/1/deliveries?status=done', headers: AUTH }), 400,
    /^querystring\/status/)
  assertError(await app.inject({ url: '/webhooks/1/deliveries?eventType=plant.moved', headers: AUTH }), 400,
    /^querystring\/eventType/)
})

test('another token\'s, another subscription\'s or a missing delivery: 404; malformed ids: 400; no token: ' +
  '401', async (t) => {
  const app = await buildWebhooksApp(t)
  await createWebhook(app)
  await createWebhook(app)
  await createPlant(app, { name: 'Fern' })
  const [delivery] = await deliveriesWhen(app, 1, (all) => all.length === 1)
  const id = delivery?.id ?? 0
  assert.equal((await getDelivery(app, 1, id)).statusCode, 200)
  assertError(await getDelivery(app, 1, id, OTHER_AUTH), 404, `Delivery ${id} of webhook subscription 1 not found`)
  assertError(await getDelivery(app, 2, id), 404, `Delivery ${id} of webhook subscription 2 not found`)
  assertError(await getDelivery(app, 1, 999), 404, 'Delivery 999 of webhook subscription 1 not found')
  assertError(await getDelivery(app, 1, 'x'), 400, 'params/deliveryId must match format "int64"')
  assertError(await getDelivery(app, 1, id, {}), 401, /authorization/i)
})
