import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH } from '../helpers/app.js'
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js'
import { startServer } from '../helpers/server-process.js'
import { subscribe } from '../helpers/webhook-http.js'
import { startReceiver } from '../helpers/webhook-receiver.js'

const SERVER = 2
const CLIENT = 3

test('traces: a SERVER span per request named by route, a child span per store operation, an incoming traceparent continued; exported over OTLP/HTTP at shutdown', { timeout: 30_000 }, async (t) => {
  const receiver = await startOtlpReceiver()
  t.after(receiver.close)
  const server = await startServer(undefined, { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: 'plant-store-test', DATABASE_URL: ':memory:' } })

  const created = await fetch(`${server.baseUrl}/plants`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: '{"name":"Fern"}' })
  assert.equal(created.status, 201)
  const upstreamTrace = '4bf92f3577b34da6a3ce929d0e0e4736'
  const upstreamSpan = '00f067aa0ba902b7'
  const read = await fetch(`${server.baseUrl}/plants/1`, { headers: { ...AUTH, traceparent: `00-${upstreamTrace}-${upstreamSpan}-01` } })
  assert.equal(read.status, 200)
  assert.equal((await fetch(`${server.baseUrl}/no/such/route`)).status, 404)

  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)

  assert.ok(receiver.paths.length > 0)
  for (const path of receiver.paths) assert.equal(path, 'POST /v1/traces application/json')
  const { spans } = receiver
  const named = (name: string): ReceivedSpan => {
    const found = spans.filter((span) => span.name === name)
    assert.equal(found.length, 1, `one span named ${name} in ${spans.map((span) => span.name).join(', ')}`)
    return found[0] as ReceivedSpan
  }
  const childrenOf = (parent: ReceivedSpan): ReceivedSpan[] => spans.filter((span) => span.parentSpanId === parent.spanId)

  const create = named('POST /plants')
  assert.equal(create.kind, SERVER)
  assert.equal(create.attributes['http.route'], '/plants')
  assert.equal(create.attributes['http.request.method'], 'POST')
  assert.equal(create.attributes['http.response.status_code'], 201)
  assert.equal(create.resource['service.name'], 'plant-store-test')
  assert.ok(create.parentSpanId === undefined || create.parentSpanId === '', 'a request without traceparent starts a trace')
  const [storeCreate, ...more] = childrenOf(create)
  assert.equal(more.length, 0)
  assert.equal(storeCreate?.name, 'store.create')
  assert.equal(storeCreate?.kind, CLIENT)
  assert.equal(storeCreate?.traceId, create.traceId)
  assert.equal(storeCreate?.attributes['db.system.name'], 'sqlite')
  assert.equal(storeCreate?.attributes['db.operation.name'], 'create')

  const get = named('GET /plants/:id')
  assert.equal(get.kind, SERVER)
  assert.equal(get.traceId, upstreamTrace, 'the caller\'s trace is continued')
  assert.equal(get.parentSpanId, upstreamSpan)
  assert.equal(get.attributes['http.response.status_code'], 200)
  assert.deepEqual(childrenOf(get).map((span) => [span.name, span.traceId]), [['store.get', upstreamTrace]])

  const unmatched = named('GET')
  assert.equal(unmatched.attributes['http.response.status_code'], 404)
  assert.equal(unmatched.attributes['http.route'], undefined)
  assert.notEqual(unmatched.traceId, create.traceId)
})

test('an unreachable collector does not hold up a shutdown: the last spans are given up after a moment, and the process exits 0', { timeout: 30_000 }, async () => {
  const receiver = await startOtlpReceiver()
  // A port where nothing listens any more.
  await receiver.close()
  const server = await startServer(undefined, { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, DATABASE_URL: ':memory:', LOG_LEVEL: 'warn' } })
  assert.equal((await fetch(`${server.baseUrl}/health/live`)).status, 200)
  server.child.kill('SIGTERM')
  const warning = await server.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('tracing: '))
  assert.match(String(warning.msg), /^tracing: (the collector did not take the last spans in time; they are dropped|the last spans could not be exported)$/)
  assert.equal(await server.exited, 0)
})

test('traces: a webhook delivery is a CLIENT span, child of the request that made the change, and the receiver gets its traceparent', { timeout: 30_000 }, async (t) => {
  const collector = await startOtlpReceiver()
  t.after(collector.close)
  const receiver = await startReceiver(t)
  const server = await startServer(undefined, {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, DATABASE_URL: ':memory:', WEBHOOK_ALLOW_PRIVATE_URLS: '1' }
  })
  await subscribe(server.baseUrl, `${receiver.origin}/hooks`)
  const created = await fetch(`${server.baseUrl}/plants`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: '{"name":"Fern"}' })
  assert.equal(created.status, 201)
  const [delivery] = await receiver.waitFor(1)
  // A moment for the attempt's span to end (it ends once the outcome is recorded).
  await new Promise((resolve) => setTimeout(resolve, 200))
  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)

  const request = collector.spans.find((span) => span.name === 'POST /plants')
  const deliver = collector.spans.find((span) => span.name === 'webhook.deliver')
  assert.ok(request !== undefined && deliver !== undefined, collector.spans.map((span) => span.name).join(', '))
  assert.equal(deliver.kind, CLIENT)
  assert.equal(deliver.traceId, request.traceId, 'the delivery joins the trace of the request that caused it')
  assert.equal(deliver.parentSpanId, request.spanId)
  assert.equal(deliver.attributes['webhook.event_type'], 'plant.created')
  assert.equal(deliver.attributes['http.response.status_code'], 204)
  assert.equal(delivery?.headers.traceparent, `00-${deliver.traceId}-${deliver.spanId}-01`, 'the receiver continues the attempt\'s span')
})
