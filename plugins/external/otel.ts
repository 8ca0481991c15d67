import type { FastifyInstance, FastifyRequest } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'
import type { FastifyOtelInstrumentationOpts } from '@fastify/otel'
import type { SpanStatus, Tracer } from '@opentelemetry/api'
import { ServiceError } from '../../src/lib/errors.js'
import { REDACTED, redactQuery, redactUrl } from '../http/redact-url.js'
import { storeOperations, type OperationObserver } from '../../src/store/instrumented.js'
import type { AttemptTrace } from '../../src/webhooks/dispatcher.js'
import type { ClaimedDelivery } from '../../src/webhooks/store-contract.js'
import { urlHost } from '../../src/webhooks/url-policy.js'

type ServiceTracing = Awaited<ReturnType<typeof startTracing>>

const TRACE_FLUSH_TIMEOUT_MS = 2000

declare module 'fastify' {
  interface FastifyInstance {
    /** Undefined unless an OTLP endpoint is set: then no OpenTelemetry package is even loaded. */
    tracing: ServiceTracing | undefined
  }
}

/** Failed exports while running are logged at most this often (each line counts the ones not logged). */
const EXPORT_ERROR_LOG_INTERVAL_MS = 60_000

/** The SDK hands a failed export's error on as JSON: its message, when it is that. */
function sdkMessage (message: string): string {
  try {
    const parsed = JSON.parse(message) as { message?: unknown }
    return typeof parsed.message === 'string' ? parsed.message : message
  } catch {
    return message
  }
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { http: 80, https: 443 }

/** What the HTTP conventions want on a server span that @fastify/otel leaves out. */
function serverAttributes (request: FastifyRequest): Record<string, string | number> {
  const scheme = request.protocol
  const userAgent = request.headers['user-agent']
  return {
    'url.scheme': scheme,
    // The Host the client asked for (as proxied, with trustProxy), not the listening socket's.
    'server.address': request.hostname,
    'server.port': request.port ?? DEFAULT_PORTS[scheme] ?? 0,
    'client.address': request.ip,
    ...(userAgent !== undefined && { 'user_agent.original': userAgent })
  }
}

/** A webhook attempt's target as the HTTP client conventions name it; credentials in the URL redacted. */
function clientAttributes (target: string): Record<string, string | number> {
  if (!URL.canParse(target)) return {}
  const url = new URL(target)
  if (url.username !== '' || url.password !== '') {
    url.username = REDACTED
    url.password = REDACTED
  }
  const scheme = url.protocol.slice(0, -1)
  return {
    'url.full': redactUrl(url.href),
    'server.address': urlHost(url),
    'server.port': url.port === '' ? DEFAULT_PORTS[scheme] ?? 0 : Number(url.port)
  }
}

type Api = typeof import('@opentelemetry/api')
type TracingSettings = NonNullable<FastifyInstance['config']['tracing']>

/** The SDK's diagnostic logger (failed exports and other troubles) into the log, at most one line a minute. */
function logSdkProblems (app: FastifyInstance, settings: TracingSettings, { diag, DiagLogLevel }: Api): void {
  let lastReport = -Infinity
  let unreported = 0
  const report = (level: 'warn' | 'error') => (message: string, ...args: unknown[]): void => {
    const now = Date.now()
    if (now - lastReport < EXPORT_ERROR_LOG_INTERVAL_MS) {
      unreported++
      return
    }
    lastReport = now
    const err = args.find((arg) => arg instanceof Error)
    app.log[level](
      {
        detail: sdkMessage(message),
        ...(err !== undefined && { err }),
        tracesUrl: settings.tracesUrl,
        ...(unreported > 0 && { unreported })
      },
      'tracing: the OpenTelemetry SDK reports a problem (a failed export drops its spans)'
    )
    unreported = 0
  }
  const quiet = (): void => {}
  diag.setLogger(
    { error: report('error'), warn: report('warn'), info: quiet, debug: quiet, verbose: quiet },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true }
  )
}

/** Names and completes each request's server span; ERROR is kept for a 5xx only. */
function describeServerSpan ({ SpanStatusCode }: Api): NonNullable<FastifyOtelInstrumentationOpts['requestHook']> {
  return (span, request) => {
    // Method and route template, as the HTTP conventions name server spans: never the raw URL.
    const route = request.routeOptions.url
    span.updateName(route === undefined ? request.method : `${request.method} ${route}`)
    span.setAttributes(serverAttributes(request))
    // url.path without the query; the query with credentials a client put there redacted.
    const question = request.url.indexOf('?')
    if (question !== -1) {
      span.setAttribute('url.path', request.url.slice(0, question))
      span.setAttribute('url.query', redactQuery(request.url.slice(question + 1)))
    }
    // @fastify/otel marks the span ERROR whenever a hook or handler throws, a 401 too: the answer decides.
    const setStatus = span.setStatus.bind(span)
    const end = span.end.bind(span)
    let error: SpanStatus | undefined
    span.setStatus = (status) => {
      if (status.code === SpanStatusCode.ERROR) error = status
      else setStatus(status)
      return span
    }
    span.end = (time) => {
      const code = (span as { attributes?: Record<string, unknown> }).attributes?.['http.response.status_code']
      if (error !== undefined && (typeof code !== 'number' || code >= 500)) setStatus(error)
      end(time)
    }
  }
}

/** Flushes the last spans on close, but never for longer than TRACE_FLUSH_TIMEOUT_MS. */
function flushOnClose (app: FastifyInstance, sdk: { shutdown: () => Promise<void> }, { diag }: Api): void {
  app.addHook('onClose', async () => {
    // An unreachable collector must not hold up a shutdown: the exporter would retry for seconds.
    const flushed = sdk.shutdown().then(() => true, (err: unknown) => {
      app.log.warn({ err }, 'tracing: the last spans could not be exported')
      return true
    })
    const gaveUp = sleep(TRACE_FLUSH_TIMEOUT_MS, false, { ref: false })
    if (!await Promise.race([flushed, gaveUp])) {
      const timeoutMs = TRACE_FLUSH_TIMEOUT_MS
      app.log.warn({ timeoutMs }, 'tracing: the collector did not take the last spans in time; they are dropped')
    }
    diag.disable()
  })
}

/** Log lines name the request's trace and span, and the handler runs in the request span's context. */
function traceRequests (app: FastifyInstance, { context }: Api): void {
  app.addHook('onRequest', function logTraceIds (request, reply, done) {
    const span = request.opentelemetry().span
    if (span != null) {
      const { traceId, spanId } = span.spanContext()
      request.log = reply.log = request.log.child({ trace_id: traceId, span_id: spanId })
    }
    done()
  })

  // The request span is current while the handler runs: the body is read outside the onRequest hook's context.
  app.addHook('onRoute', (routeOptions) => {
    const handler = routeOptions.handler
    routeOptions.handler = function tracedHandler (request, reply) {
      const current = request.opentelemetry()
      return current.context == null
        ? handler.call(this, request, reply)
        : context.with(current.context, handler, this, request, reply)
    }
  })
}

/** A CLIENT span per store operation; a refusal the store answers with is not a failure. */
function storeSpans (app: FastifyInstance, tracer: Tracer, { SpanKind, SpanStatusCode }: Api): OperationObserver {
  const spanNames = new Map(storeOperations(app.resources).map((operation) => [operation, `store.${operation}`]))
  const storeKind = app.config.databaseUrl.startsWith('postgres') ? 'postgresql' : 'sqlite'
  return (operation) => {
    const span = tracer.startSpan(spanNames.get(operation) ?? operation, {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system.name': storeKind, 'db.operation.name': operation }
    })
    return (error) => {
      // A missing resource or a failed If-Match is an answer, not a failure of the operation.
      const failed = error !== undefined && !(error instanceof ServiceError && error.code !== 'unavailable')
      if (failed) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) })
      }
      span.end()
    }
  }
}

function webhookSpans (tracer: Tracer, api: Api): (delivery: ClaimedDelivery) => AttemptTrace {
  const { propagation, trace, ROOT_CONTEXT, SpanKind, SpanStatusCode } = api
  return (delivery) => {
    const { traceparent } = delivery.origin
    const parent = traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, { traceparent })
    const span = tracer.startSpan('webhook.deliver', {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': 'POST',
        ...clientAttributes(delivery.url),
        'webhook.event_type': delivery.eventType,
        'webhook.message_id': delivery.messageId,
        'webhook.subscription_id': String(delivery.subscriptionId),
        'webhook.attempt': delivery.attempts + 1
      }
    }, parent)
    const headers: Record<string, string> = {}
    propagation.inject(trace.setSpan(parent, span), headers)
    return {
      headers,
      end: (attempt) => {
        if (attempt.statusCode !== undefined) span.setAttribute('http.response.status_code', attempt.statusCode)
        if (attempt.status !== 'succeeded') {
          span.setStatus({ code: SpanStatusCode.ERROR, message: attempt.error ?? 'not delivered' })
        }
        span.end()
      }
    }
  }
}

/**
 * Traces over OTLP as the standard OTEL_* variables say. Hook spans are off: a dozen per request would cost more
 * than they tell. Registered first, so the request span covers every other hook.
 */
export default fp(async function otelPlugin (app) {
  const settings = app.config.tracing
  app.decorate('tracing', settings === undefined ? undefined : await startTracing(app, settings))
}, { name: 'tracing', dependencies: ['config', 'resources'] })

async function startTracing (app: FastifyInstance, settings: TracingSettings) {
  const [api, { NodeSDK, resources }, { FastifyOtelInstrumentation }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-node'),
    import('@fastify/otel')
  ])
  logSdkProblems(app, settings, api)

  const instrumentation = new FastifyOtelInstrumentation({
    instrumentHooks: false,
    instrumentHandler: false,
    requestHook: describeServerSpan(api)
  })
  const sdk = new NodeSDK({
    serviceName: settings.serviceName,
    // OTEL_RESOURCE_ATTRIBUTES, detected after, still overrides the version.
    resource: resources.defaultResource()
      .merge(resources.resourceFromAttributes({ 'service.version': app.config.version })),
    instrumentations: [instrumentation],
    // Traces only: the SDK would otherwise start OTLP metric and log exporters too.
    metricReaders: [],
    logRecordProcessors: []
  })
  sdk.start()
  flushOnClose(app, sdk, api)

  await app.register(instrumentation.plugin())
  traceRequests(app, api)

  const tracer = api.trace.getTracer('plant-store', app.config.version)
  return {
    storeOperation: storeSpans(app, tracer, api),
    /** W3C `traceparent`/`tracestate` for calls this service makes, so the receiver's spans join the trace. */
    injectTraceContext: (headers: Record<string, string>) => { api.propagation.inject(api.context.active(), headers) },
    /** A CLIENT span per delivery attempt, a child of the span of the request that caused the event. */
    webhookAttempt: webhookSpans(tracer, api)
  }
}
