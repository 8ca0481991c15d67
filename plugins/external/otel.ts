import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'
import type { FastifyOtelRequestContext } from '@fastify/otel'
import type { SpanStatus } from '@opentelemetry/api'
import { ServiceError } from '../../src/errors.js'
import { redactQuery } from '../../src/redact-url.js'
import { STORE_OPERATIONS, type OperationObserver } from '../../src/store/instrumented.js'
import type { AttemptTrace } from '../../src/webhooks/dispatcher.js'
import type { ClaimedDelivery } from '../../src/webhooks/store.js'

/**
 * What the rest of the service uses of tracing, present only when an OTLP endpoint is set.
 */
export interface ServiceTracing {
  /** Opens a child span of the current request's span for each store operation. */
  storeOperation: OperationObserver
  /**
   * Writes the current trace context into outgoing headers (W3C `traceparent`/`tracestate`): the
   * hook for calls this service makes, such as webhook deliveries, so the receiver's spans join
   * the request's trace: `app.tracing?.injectTraceContext(headers)`.
   */
  injectTraceContext: (headers: Record<string, string>) => void
  /**
   * Opens a CLIENT span for one webhook delivery attempt, a child of the span of the request whose
   * write caused the event (its stored traceparent), and gives the attempt's own traceparent to send.
   */
  webhookAttempt: (delivery: ClaimedDelivery) => AttemptTrace
}

/** How long a shutdown waits for the collector to take the last spans. */
const TRACE_FLUSH_TIMEOUT_MS = 2000

declare module 'fastify' {
  interface FastifyInstance {
    /** Undefined unless an OTLP endpoint is set: then no OpenTelemetry package is even loaded. */
    tracing: ServiceTracing | undefined
  }
}

/** Failed exports while running are logged at most this often (each line counts the ones not logged). */
const EXPORT_ERROR_LOG_INTERVAL_MS = 60_000

/** The SDK hands an error on as its JSON (a failed export's HTTP status, its text): its message, when it is that. */
function sdkMessage (message: string): string {
  try {
    const parsed = JSON.parse(message) as { message?: unknown }
    return typeof parsed.message === 'string' ? parsed.message : message
  } catch {
    return message
  }
}

/**
 * Traces (OpenTelemetry), exported over OTLP as the standard variables say: the SDK
 * (`@opentelemetry/sdk-node`) picks the exporter by OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL
 * (http/protobuf by default, http/json, grpc) and the exporter reads the endpoint, headers and
 * timeout from the OTEL_EXPORTER_OTLP_* variables itself. One SERVER span per request named
 * `METHOD /route/template` (by `@fastify/otel`, which also reads an incoming W3C `traceparent`),
 * its status ERROR for a 5xx answer only (a 4xx is the client's error: the HTTP conventions leave
 * server spans unset), and a child span per store operation. Hook spans are off: a dozen spans per
 * request would cost more than they tell. Traces only (no OTel metrics or logs: Prometheus and
 * pino cover those); what the SDK holds is flushed when the app closes. Every log line of a
 * request carries its `trace_id` and `span_id`. Exports that fail while running are logged,
 * rate-limited. Unset: none of these packages is loaded.
 *
 * Registered first, so the request span opens before any other hook runs and covers them all.
 */
export default fp(async function otelPlugin (app) {
  const settings = app.config.tracing
  if (settings === undefined) {
    app.decorate('tracing', undefined)
    return
  }
  const [{ context, diag, DiagLogLevel, propagation, trace, ROOT_CONTEXT, SpanKind, SpanStatusCode }, { NodeSDK }, { FastifyOtelInstrumentation }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-node'),
    import('@fastify/otel')
  ])

  // The SDK reports failed exports (and its other troubles) through its diagnostic logger: into
  // the service's log, at most one line a minute, counting the ones left out.
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
    app.log[level]({ detail: sdkMessage(message), ...(err !== undefined && { err }), tracesUrl: settings.tracesUrl, ...(unreported > 0 && { unreported }) },
      'tracing: the OpenTelemetry SDK reports a problem (a failed export drops its spans)')
    unreported = 0
  }
  const quiet = (): void => {}
  diag.setLogger({ error: report('error'), warn: report('warn'), info: quiet, debug: quiet, verbose: quiet }, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true })

  const instrumentation = new FastifyOtelInstrumentation({
    instrumentHooks: false,
    instrumentHandler: false,
    requestHook: (span, request) => {
      // Named as the OpenTelemetry HTTP conventions name server spans: method and route template
      // (never the raw URL, whose ids would make every span name unique).
      const route = request.routeOptions.url
      span.updateName(route === undefined ? request.method : `${request.method} ${route}`)
      // url.path without the query; the query with credentials a client put there redacted.
      const question = request.url.indexOf('?')
      if (question !== -1) {
        span.setAttribute('url.path', request.url.slice(0, question))
        span.setAttribute('url.query', redactQuery(request.url.slice(question + 1)))
      }
      // @fastify/otel marks the span ERROR whenever a hook or handler throws, a 401 or 404 too.
      // The status waits for the answer: ERROR stays for a 5xx only.
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
  })
  const sdk = new NodeSDK({
    serviceName: settings.serviceName,
    instrumentations: [instrumentation],
    // Traces only: without these the SDK would also start OTLP metric and log exporters by default.
    metricReaders: [],
    logRecordProcessors: []
  })
  sdk.start()
  app.addHook('onClose', async () => {
    // Sends the spans still batched, but an unreachable collector must not hold up a shutdown:
    // the exporter would retry for up to ten seconds, eating SHUTDOWN_GRACE_MS.
    const flushed = sdk.shutdown().then(() => true, (err: unknown) => {
      app.log.warn({ err }, 'tracing: the last spans could not be exported')
      return true
    })
    const gaveUp = sleep(TRACE_FLUSH_TIMEOUT_MS, false, { ref: false })
    if (!await Promise.race([flushed, gaveUp])) app.log.warn({ timeoutMs: TRACE_FLUSH_TIMEOUT_MS }, 'tracing: the collector did not take the last spans in time; they are dropped')
    diag.disable()
  })

  await app.register(instrumentation.plugin())

  // Every line logged for a request names its trace and span, so a log search and a trace view
  // lead to each other (the access line included: it is written with request.log).
  app.addHook('onRequest', function logTraceIds (request, reply, done) {
    const span = request.opentelemetry().span
    if (span != null) {
      const { traceId, spanId } = span.spanContext()
      request.log = reply.log = request.log.child({ trace_id: traceId, span_id: spanId })
    }
    done()
  })

  // The request span is made current while the handler runs, so the store operations it calls
  // open their spans as its children (without this, a POST whose body arrived later would have
  // lost it: the body is read outside the onRequest hook's context).
  app.addHook('onRoute', (routeOptions) => {
    const handler = routeOptions.handler
    routeOptions.handler = function tracedHandler (this: ThisParameterType<RouteHandlerMethod>, request: FastifyRequest, reply: FastifyReply) {
      const current: FastifyOtelRequestContext = request.opentelemetry()
      return current.context == null ? handler.call(this, request, reply) : context.with(current.context, handler, this, request, reply)
    } as RouteHandlerMethod
  })

  const tracer = trace.getTracer('plant-store', app.config.version)
  const spanNames = new Map(STORE_OPERATIONS.map((operation) => [operation, `store.${operation}`]))
  const storeKind = app.config.databaseUrl.startsWith('postgres') ? 'postgresql' : 'sqlite'
  app.decorate('tracing', {
    storeOperation: (operation) => {
      const span = tracer.startSpan(spanNames.get(operation) ?? operation, {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system.name': storeKind, 'db.operation.name': operation }
      })
      return (error) => {
        // A missing plant or a failed If-Match is an answer, not a failure of the operation.
        const failed = error !== undefined && !(error instanceof ServiceError && error.code !== 'unavailable')
        if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) })
        span.end()
      }
    },
    injectTraceContext: (headers) => { propagation.inject(context.active(), headers) },
    webhookAttempt: (delivery) => {
      const { traceparent } = delivery.origin
      const parent = traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, { traceparent })
      const span = tracer.startSpan('webhook.deliver', {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': 'POST',
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
          if (attempt.status !== 'succeeded') span.setStatus({ code: SpanStatusCode.ERROR, message: attempt.error ?? 'not delivered' })
          span.end()
        }
      }
    }
  })
}, { name: 'tracing', dependencies: ['config'] })
