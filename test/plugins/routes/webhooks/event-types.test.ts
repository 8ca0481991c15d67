import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { AUTH } from '../../../helpers/app.js'
import { assertError, createPlant, JSON_TYPE } from '../../../helpers/plants.js'
import { EVENT_TYPES, PLANT_CREATED } from '../../../helpers/resources.js'
import { startReceiver } from '../../../helpers/webhook-receiver.js'
import { buildWebhooksApp, createWebhook } from '../../../helpers/webhooks.js'

interface Entry { type: string, description: string, schema: Record<string, unknown> }

test('event-types: every type with its description and body schema; real bodies validate against them ' +
  '(receiver on 127.0.0.1)', async (t) => {
  const receiver = await startReceiver(t)
  const app = await buildWebhooksApp(t, { WEBHOOK_ALLOW_PRIVATE_URLS: '1' })
  const res = await app.inject({ url: '/webhooks/event-types', headers: AUTH })
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  const entries = res.json<Entry[]>()
  assert.deepEqual(entries.map((entry) => entry.type), EVENT_TYPES)
  for (const entry of entries) assert.ok(entry.description.length > 10, entry.type)
  const ajv = new Ajv2020({ strict: false })
  addFormats.default(ajv)
  ajv.addFormat('int64', true)
  const validators = new Map(entries.map((entry) => [entry.type, ajv.compile(entry.schema)]))
  await createWebhook(app, { url: `${receiver.origin}/hooks` })
  await createPlant(app, { name: 'Fern', tag: 'green' })
  await app.inject({ method: 'PATCH', url: '/plants/1', headers: AUTH, payload: { name: 'Boston fern' } })
  await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  await app.inject({ method: 'POST', url: '/webhooks/1/test', headers: AUTH })
  const requests = await receiver.waitFor(4)
  for (const request of requests) {
    const body = JSON.parse(request.body) as { type: string }
    const validate = validators.get(body.type)
    assert.ok(validate !== undefined, body.type)
    assert.equal(validate(body), true, JSON.stringify(validate.errors))
    assert.equal(validators.get(body.type === 'webhook.test' ? PLANT_CREATED : 'webhook.test')?.(body), false,
      'each schema is its own type\'s')
  }
  assertError(await app.inject({ url: '/webhooks/event-types' }), 401, /authorization/i)
})
