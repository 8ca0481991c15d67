import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'
import type { FastifyOtelRequestContext } from '@fastify/otel'
import { ServiceError } from '../../src/errors.js'
import { STORE_OPERATIONS, type OperationObserver } from '../../src/store/instrumented.js'
import type { AttemptTrace } from '../../src/webhooks/dispatcher.js'
import type { ClaimedDelivery } from '../../src/webhooks/store.js'

export interface ServiceTracing {
  storeOperation: OperationObserver
  /** W3C `traceparent`/`tracestate` for calls this service makes, so the receiver's spans join the trace. */
  injectTraceContext: (headers: Record<string, string>) => void
  /** A CLIENT span per delivery attempt, a child of the span of the request that caused the event. */
  webhookAttempt: (delivery: ClaimedDelivery) => AttemptTrace
}

const TRACE_FLUSH_TIMEOUT_MS = 2000

declare module 'fastify' {
  interface FastifyInstance {
    /** Undefined unless OTEL_EXPORTER_OTLP_ENDPOINT is set: then no OpenTelemetry package is even loaded. */
    tracing: ServiceTracing | undefined
  }
}

/**
 * OTLP/HTTP traces: a SERVER span per request (`@fastify/otel`) and a child per store operation.
 * Hook spans are off: a dozen per request would cost more than they tell. Registered first, so the
 * request span covers every other hook.
 */
export default fp(async function otelPlugin (app) {
  const settings = app.config.tracing
  if (settings === undefined) {
    app.decorate('tracing', undefined)
    return
  }
  const [{ context, propagation, trace, ROOT_CONTEXT, SpanKind, SpanStatusCode }, { NodeSDK }, { OTLPTraceExporter }, { FastifyOtelInstrumentation }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@fastify/otel')
  ])

  const instrumentation = new FastifyOtelInstrumentation({
    instrumentHooks: false,
    instrumentHandler: false,
    // Method and route template, never the raw URL, whose ids would make every span name unique.
    requestHook: (span, request) => {
      const route = request.routeOptions.url
      span.updateName(route === undefined ? request.method : `${request.method} ${route}`)
    }
  })
  const sdk = new NodeSDK({
    serviceName: settings.serviceName,
    traceExporter: new OTLPTraceExporter({ url: settings.tracesUrl }),
    instrumentations: [instrumentation],
    // Traces only: the SDK would otherwise start OTLP metric and log exporters too.
    metricReaders: [],
    logRecordProcessors: []
  })
  sdk.start()
  app.addHook('onClose', async () => {
    // An unreachable collector must not hold up a shutdown: the exporter would retry for seconds.
    const flushed = sdk.shutdown().then(() => true, (err: unknown) => {
      app.log.warn({ err }, 'tracing: the last spans could not be exported')
      return true
    })
    const gaveUp = sleep(TRACE_FLUSH_TIMEOUT_MS, false, { ref: false })
    if (!await Promise.race([flushed, gaveUp])) app.log.warn({ timeoutMs: TRACE_FLUSH_TIMEOUT_MS }, 'tracing: the collector did not take the last spans in time; they are dropped')
  })

  await app.register(instrumentation.plugin())

  // The request span is current while the handler runs: the body is read outside the onRequest hook's context.
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
