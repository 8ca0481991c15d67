import { maxHeaderSize } from 'node:http'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import { destination } from 'pino'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import authPlugin from '../../plugins/app/auth.js'
import configPlugin from '../../plugins/app/config.js'
import connectionsPlugin from '../../plugins/app/connections.js'
import corsPlugin from '../../plugins/external/cors.js'
import databaseWatchPlugin from '../../plugins/app/database-watch.js'
import docsPlugin from '../../plugins/external/docs.js'
import errorsPlugin, {
  clientErrorHandler,
  formatValidationErrors,
  frameworkErrorHandler
} from '../../plugins/app/error-handler.js'
import healthRoutes from '../../plugins/routes/health.js'
import helmetPlugin from '../../plugins/external/helmet.js'
import metricsPlugin from '../../plugins/app/metrics.js'
import otelPlugin from '../../plugins/external/otel.js'
import rateLimitPlugin from '../../plugins/external/rate-limit.js'
import resourceRoutes from '../../plugins/routes/resources/index.js'
import requestsPlugin from '../../plugins/app/requests.js'
import resourcesPlugin from '../../plugins/app/resources.js'
import requestIdPlugin, { AccessLog, requestId } from '../../plugins/app/request-log.js'
import schemasPlugin, { ajvOptions, sharedSerializer, validatorWithoutBodyCoercion } from '../../plugins/app/schemas.js'
import storePlugin from '../../plugins/app/open-store.js'
import tenantStorePlugin from '../../plugins/app/sandbox-tenants.js'
import underPressurePlugin from '../../plugins/external/under-pressure.js'
import webhooksPlugin from '../../plugins/app/webhooks.js'
import webhooksRoutes from '../../plugins/routes/webhooks/index.js'
import type { ApiLoadOptions } from '../webhooks/api-load.js'
import type { RequestFunction } from '../webhooks/deliver.js'
import type { Resolver } from '../webhooks/url-policy.js'
import type { Config } from '../load-config.js'
import { redactUrl } from '../../plugins/http/redact-url.js'
import type { ResourceDefinition } from '../resources/definition.js'
import { RESOURCES } from '../resources/index.js'

export interface BuildOptions {
  logStream?: { write (line: string): void }
  webhookRequest?: RequestFunction
  webhookLoad?: ApiLoadOptions
  /** Resolves webhook hosts at creation and delivery (tests answer from a table: no DNS). */
  webhookResolve?: Resolver
  /** The sandbox's clock for tenant use and expiry (tests move it instead of waiting). */
  sandboxNow?: () => number
  /** The resources served, in the document's order: RESOURCES by default (tests declare others in test code). */
  resources?: readonly ResourceDefinition[]
}

/** Hop 0 is the socket's peer. */
function trustHops (hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops
}

/** Builds the whole service from its plugins; tests `inject`, server.ts listens (see docs/architecture.md). */
export async function buildApp (config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const { timeouts } = config
  const resources = options.resources ?? RESOURCES
  const app = Fastify({
    logger: {
      level: config.logLevel,
      // Async log writes: see docs/performance.md#what-the-measurements-decided.
      stream: options.logStream ?? destination({ dest: 1, sync: false }),
      // Tokens never reach the logs, whatever a serializer or a plugin decides to print.
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization'], censor: '[redacted]' },
      // Fastify's request serializer, with credentials in the query string redacted from the URL.
      serializers: {
        req: (request: FastifyRequest) => ({
          method: request.method,
          url: redactUrl(request.url),
          host: request.host,
          remoteAddress: request.ip,
          ...(request.socket?.remotePort !== undefined && { remotePort: request.socket.remotePort })
        })
      }
    },
    genReqId: requestId,
    requestIdHeader: false,
    logController: new AccessLog(),
    // A hop count as Fastify itself compiles one (its types only name the other forms).
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    ajv: ajvOptions,
    // JSON bodies are validated as sent, without type coercion; compiled schemas are shared between apps
    // (see plugins/app/schemas.ts).
    schemaController: {
      compilersFactory: { buildValidator: validatorWithoutBodyCoercion, buildSerializer: sharedSerializer }
    },
    schemaErrorFormatter: formatValidationErrors,
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    // Drained requests are answered by the errors plugin, in the Error shape.
    return503OnClosing: false,
    bodyLimit: config.bodyLimit,
    // A long id still reaches validation (a 400): past the router's default of 100 it would answer 414 itself.
    routerOptions: { maxParamLength: maxHeaderSize },
    // The store plugin may wait for a PostgreSQL still starting: Fastify's 10 s plugin deadline must not cut that
    // short.
    pluginTimeout: Math.max(10_000, config.pgStartupTimeoutMs + config.pgConnectTimeoutMs + 10_000),
    // A slow client cannot hold a connection: every phase has a deadline.
    requestTimeout: timeouts.request,
    connectionTimeout: timeouts.connection,
    keepAliveTimeout: timeouts.keepAlive,
    http: {
      // Node would answer a request without Host with a bare 400; the requests plugin answers it in the Error shape.
      requireHostHeader: false,
      headersTimeout: timeouts.headers,
      requestTimeout: timeouts.request,
      // Node checks those deadlines on this interval (30 s by default): check often enough to honour them.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(timeouts.headers / 2)))
    }
  }).withTypeProvider<TypeBoxTypeProvider>()

  try {
    await registerPlugins(app, config, resources, options)
  } catch (err) {
    // What did start (the metrics listener, the store, timers) stops: a caller that catches the error
    // is left with no listener or handle holding its process open.
    await app.close().catch(() => {})
    throw err
  }
  return app
}

/** The plugins, in order: see docs/architecture.md. */
async function registerPlugins (
  app: FastifyInstance, config: Config, resources: readonly ResourceDefinition[], options: BuildOptions
): Promise<void> {
  await app.register(configPlugin, { config })
  await app.register(resourcesPlugin, { resources })
  // First: the request span opens, and the request id is set, before any other hook runs.
  await app.register(otelPlugin)
  await app.register(requestIdPlugin)
  await app.register(metricsPlugin)
  await app.register(errorsPlugin)
  await app.register(schemasPlugin)
  await app.register(connectionsPlugin)
  await app.register(underPressurePlugin)
  await app.register(helmetPlugin)
  await app.register(corsPlugin)
  await app.register(storePlugin)
  await app.register(databaseWatchPlugin)
  await app.register(webhooksPlugin, {
    ...(options.webhookRequest !== undefined && { request: options.webhookRequest }),
    ...(options.webhookLoad !== undefined && { load: options.webhookLoad }),
    ...(options.webhookResolve !== undefined && { resolve: options.webhookResolve })
  })
  await app.register(authPlugin)
  await app.register(rateLimitPlugin)
  await app.register(tenantStorePlugin, {
    ...(options.webhookRequest !== undefined && { request: options.webhookRequest }),
    ...(options.webhookResolve !== undefined && { resolve: options.webhookResolve }),
    ...(options.sandboxNow !== undefined && { now: options.sandboxNow })
  })
  await app.register(requestsPlugin)
  await app.register(docsPlugin)
  await app.register(healthRoutes)
  for (const resource of resources) await app.register(resourceRoutes, { resource })
  await app.register(webhooksRoutes)
}
