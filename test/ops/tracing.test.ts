import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { AUTH } from '../helpers/app.js'
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js'
import { startServer } from '../helpers/server-process.js'
import { subscribe } from '../helpers/webhook-http.js'
import { startReceiver } from '../helpers/webhook-receiver.js'

const SERVER = 2
const CLIENT = 3
const PACKAGE_VERSION = (JSON.parse(
  readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version

test('traces: a SERVER span per request named by route, a child span per store operation, an incoming traceparent ' +
  'continued; exported over OTLP/HTTP at shutdown', { timeout: 30_000 }, async (t) => {
  const receiver = await startOtlpReceiver()
  t.after(receiver.close)
  const server = await startServer(undefined,
    {
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_SERVICE_NAME: 'plant-store-test',
        DATABASE_URL: ':memory:'
      }
    })

  const created = await fetch(`${server.baseUrl}/plants`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json', 'user-agent': 'tracing-test/1.0' },
    body: '{"name":"Fern"}'
  })
  assert.equal(created.status, 201)
  const upstreamTrace = '4bf92f3577b34da6a3ce929d0e0e4736'
  const upstreamSpan = '00f067aa0ba902b7'
  const read = await fetch(`${server.baseUrl}/plants/1`,
    { headers: { ...AUTH, traceparent: `00-${upstreamTrace}-${upstreamSpan}-01` } })
  assert.equal(read.status, 200)
  assert.equal((await fetch(`${server.baseUrl}/no/such/route`)).status, 404)

  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)

  assert.ok(receiver.paths.length > 0)
  // http/protobuf, the specification's default protocol.
  for (const path of receiver.paths) assert.equal(path, 'POST /v1/traces application/x-protobuf')
  const { spans } = receiver
  const named = (name: string): ReceivedSpan => {
    const found = spans.filter((span) => span.name === name)
    assert.equal(found.length, 1, `one span named ${name} in ${spans.map((span) => span.name).join(', ')}`)
    return found[0] as ReceivedSpan
  }
  const childrenOf = (parent: ReceivedSpan): ReceivedSpan[] => spans.filter(
    (span) => span.parentSpanId === parent.spanId)

  const create = named('POST /plants')
  assert.equal(create.kind, SERVER)
  assert.equal(create.attributes['http.route'], '/plants')
  assert.equal(create.attributes['http.request.method'], 'POST')
  assert.equal(create.attributes['http.response.status_code'], 201)
  assert.equal(create.resource['service.name'], 'plant-store-test')
  assert.equal(create.resource['service.version'], PACKAGE_VERSION)
  // The HTTP server conventions' required and recommended attributes.
  const { port } = new URL(server.baseUrl)
  assert.equal(create.attributes['url.scheme'], 'http')
  assert.equal(create.attributes['server.address'], '127.0.0.1')
  assert.equal(create.attributes['server.port'], Number(port))
  assert.equal(create.attributes['client.address'], '127.0.0.1')
  assert.equal(create.attributes['user_agent.original'], 'tracing-test/1.0')
  assert.ok(create.parentSpanId === undefined || create.parentSpanId === '',
    'a request without traceparent starts a trace')
  const [storeCreate, ...more] = childrenOf(create)
  assert.equal(more.length, 0)
  assert.equal(storeCreate?.name, 'store.plants.create')
  assert.equal(storeCreate?.kind, CLIENT)
  assert.equal(storeCreate?.traceId, create.traceId)
  assert.equal(storeCreate?.attributes['db.system.name'], 'sqlite')
  assert.equal(storeCreate?.attributes['db.operation.name'], 'plants.create')

  const get = named('GET /plants/:id')
  assert.equal(get.kind, SERVER)
  assert.equal(get.traceId, upstreamTrace, 'the caller\'s trace is continued')
  assert.equal(get.parentSpanId, upstreamSpan)
  assert.equal(get.attributes['http.response.status_code'], 200)
  assert.deepEqual(childrenOf(get).map((span) => [span.name, span.traceId]), [['store.plants.get', upstreamTrace]])

  const unmatched = named('GET')
  assert.equal(unmatched.attributes['http.response.status_code'], 404)
  assert.equal(unmatched.status?.code ?? 0, 0, 'a 4xx leaves a server span\'s status unset')
  assert.equal(unmatched.attributes['http.route'], undefined)
  assert.notEqual(unmatched.traceId, create.traceId)
})

test('an unreachable collector does not hold up a shutdown: the last spans are given up after a moment, ' +
  'and the process exits 0', { timeout: 30_000 }, async () => {
  const receiver = await startOtlpReceiver()
  // A port where nothing listens any more.
  await receiver.close()
  const server = await startServer(undefined,
    { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, DATABASE_URL: ':memory:', LOG_LEVEL: 'warn' } })
  assert.equal((await fetch(`${server.baseUrl}/health/live`)).status, 200)
  server.child.kill('SIGTERM')
  const warning = await server.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('tracing: '))
  assert.match(String(warning.msg), new RegExp('^tracing: (' + [
    /the collector did not take the last spans in time; they are dropped/.source,
    /the last spans could not be exported/.source
  ].join('|') + ')$'))
  assert.equal(await server.exited, 0)
})

test('traces: a webhook delivery is a CLIENT span, child of the request that made the change, and the receiver ' +
  'gets its traceparent', { timeout: 30_000 }, async (t) => {
  const collector = await startOtlpReceiver()
  t.after(collector.close)
  const receiver = await startReceiver(t)
  const server = await startServer(undefined, {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, DATABASE_URL: ':memory:', WEBHOOK_ALLOW_PRIVATE_URLS: '1' }
  })
  await subscribe(server.baseUrl, `${receiver.origin}/hooks`)
  const created = await fetch(`${server.baseUrl}/plants`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: '{"name":"Fern"}'
  })
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
  assert.equal(deliver.attributes['url.full'], `${receiver.origin}/hooks`)
  assert.equal(deliver.attributes['server.address'], '127.0.0.1')
  assert.equal(deliver.attributes['server.port'], Number(new URL(receiver.origin).port))
  assert.equal(delivery?.headers.traceparent, `00-${deliver.traceId}-${deliver.spanId}-01`,
    'the receiver continues the attempt\'s span')
})

test('OTEL_EXPORTER_OTLP_PROTOCOL=http/json sends JSON to <endpoint>/v1/traces, with OTEL_EXPORTER_OTLP_HEADERS; the ' +
  'credentials in a query are redacted in url.query', { timeout: 30_000 }, async (t) => {
  const receiver = await startOtlpReceiver()
  t.after(receiver.close)
  const server = await startServer(undefined, {
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.endpoint}/base`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k1,x-tenant=plants',
      DATABASE_URL: ':memory:'
    }
  })
  assert.equal((await fetch(`${server.baseUrl}/plants?limit=1&access_token=s3cret`, { headers: AUTH })).status, 400)
  assert.equal((await fetch(`${server.baseUrl}/plants/1`)).status, 401)
  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)

  assert.ok(receiver.exports.length > 0)
  for (const received of receiver.exports) {
    assert.deepEqual([received.method, received.path, received.contentType],
      ['POST', '/base/v1/traces', 'application/json'])
    assert.equal(received.headers['x-collector-key'], 'k1')
    assert.equal(received.headers['x-tenant'], 'plants')
  }
  const list = receiver.spans.find((span) => span.name === 'GET /plants')
  assert.equal(list?.attributes['url.path'], '/plants')
  assert.equal(list?.attributes['url.query'], 'limit=1&access_token=[redacted]')
  assert.doesNotMatch(JSON.stringify(receiver.spans), /s3cret/)
  assert.equal(list?.status?.code ?? 0, 0)
  const unauthorized = receiver.spans.find((span) => span.name === 'GET /plants/:id')
  assert.equal(unauthorized?.attributes['http.response.status_code'], 401)
  assert.equal(unauthorized?.status?.code ?? 0, 0, 'a 401 leaves the status unset')
})

test('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT alone turns tracing on and is used as it is (protobuf); request log lines ' +
  'carry trace_id and span_id', { timeout: 30_000 }, async (t) => {
  const receiver = await startOtlpReceiver()
  t.after(receiver.close)
  const server = await startServer(undefined, {
    env: {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.endpoint}/custom/traces`,
      DATABASE_URL: ':memory:',
      LOG_LEVEL: 'info'
    }
  })
  const upstreamTrace = '0af7651916cd43dd8448eb211c80319c'
  const read = await fetch(`${server.baseUrl}/plants/7`,
    { headers: { ...AUTH, traceparent: `00-${upstreamTrace}-b7ad6b7169203331-01`, 'x-request-id': 'traced-1' } })
  assert.equal(read.status, 404)
  const access = await server.waitForLog((line) => line.reqId === 'traced-1' && line.msg === 'request completed')
  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)

  assert.ok(receiver.exports.length > 0)
  for (const received of receiver.exports) {
    assert.deepEqual([received.path, received.contentType], ['/custom/traces', 'application/x-protobuf'])
  }
  const span = receiver.spans.find((candidate) => candidate.name === 'GET /plants/:id')
  assert.ok(span !== undefined)
  assert.equal(access.trace_id, upstreamTrace)
  assert.equal(access.span_id, span.spanId)
  assert.equal(span.status?.code ?? 0, 0, 'a 404 leaves the status unset')
})

test('exports that fail while the service runs are logged, at ' +
  'most one line a minute', { timeout: 30_000 }, async (t) => {
  const receiver = await startOtlpReceiver()
  t.after(receiver.close)
  receiver.failing(true)
  const server = await startServer(undefined, {
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '50',
      DATABASE_URL: ':memory:',
      LOG_LEVEL: 'warn'
    }
  })
  const failures = (): number => server.stdout().split('\n').filter(
    (line) => line.includes('"msg":"tracing: the OpenTelemetry SDK reports a problem')).length
  assert.equal((await fetch(`${server.baseUrl}/health/live`)).status, 200)
  const line = await server.waitForLog((candidate) => String(candidate.msg).startsWith('tracing: '))
  assert.equal(line.msg, 'tracing: the OpenTelemetry SDK reports a problem (a failed export drops its spans)')
  assert.equal(line.tracesUrl, `${receiver.endpoint}/v1/traces`)
  assert.match(String(line.detail), /Bad Request|400/)
  // Another batch fails: counted, not logged again within the minute.
  const exported = receiver.exports.length
  assert.equal((await fetch(`${server.baseUrl}/health/live`)).status, 200)
  while (receiver.exports.length === exported) await new Promise((resolve) => setTimeout(resolve, 20))
  await new Promise((resolve) => setTimeout(resolve, 200))
  assert.equal(failures(), 1)
  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)
})
