import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../../src/main/app.js'
import { loadConfig } from '../../../src/config/load-config.js'
import { AUTH, TOKEN } from '../../helpers/app.js'
import { startOtlpReceiver } from '../../helpers/otlp-receiver.js'

// The OpenTelemetry SDK registers process-wide providers: this file builds one traced app only.
test('in-process: the traced app exports its request and store spans when it closes, and offers the trace ' +
  'context for outgoing calls', async (t) => {
  const receiver = await startOtlpReceiver()
  t.after(receiver.close)
  // The SDK reads the OTEL_* variables from process.env itself, as a started server's are.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.endpoint
  t.after(() => { delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT })
  // Load shedding off: a busy machine's event loop delay must not turn an answer into a 503.
  const app = await buildApp(
    loadConfig({
      DATABASE_URL: ':memory:',
      API_TOKENS: TOKEN,
      LOG_LEVEL: 'silent',
      MAX_EVENT_LOOP_DELAY_MS: '0',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint
    }))
  app.get('/fails', async () => { throw new Error('broken on purpose') })
  // Where a webhook delivery will call it: inside a request, the outgoing headers get its trace.
  app.get('/outgoing-headers', async () => {
    const headers: Record<string, string> = {}
    app.tracing?.injectTraceContext(headers)
    return headers
  })
  await app.ready()
  assert.ok(app.tracing)

  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
  const outgoing = await app.inject({
    url: '/outgoing-headers',
    headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` }
  })
  assert.match(outgoing.json<{ traceparent: string }>().traceparent, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`))

  assert.equal(
    (await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'Fern' } })).statusCode, 201)
  assert.equal((await app.inject({ method: 'DELETE', url: '/plants/7', headers: AUTH })).statusCode, 404)
  assert.equal((await app.inject({ url: '/fails' })).statusCode, 500)
  // Outside a request there is no trace to continue: nothing is written.
  const outside: Record<string, string> = {}
  app.tracing.injectTraceContext(outside)
  assert.deepEqual(outside, {})
  await app.close()

  const names = receiver.spans.map((span) => span.name).sort()
  assert.deepEqual(names,
    ['DELETE /plants/:id', 'GET /fails', 'GET /outgoing-headers', 'POST /plants', 'store.plants.create',
      'store.plants.delete'])
  // A 5xx is the server's error (status ERROR, with the error's message); a 404 is not (unset).
  const status = (name: string): unknown => receiver.spans.find((span) => span.name === name)?.status ?? {}
  assert.deepEqual(status('GET /fails'), { code: 2, message: 'broken on purpose' })
  assert.equal((status('DELETE /plants/:id') as { code?: number }).code ?? 0, 0)
  const deleted = receiver.spans.find((span) => span.name === 'store.plants.delete')
  // A missing plant is an answer (404), not a failed operation.
  assert.notEqual(deleted?.status?.code, 2)
})
