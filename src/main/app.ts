import Fastify, { type FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import authPlugin from '../../plugins/app/auth.js'
import configPlugin from '../../plugins/app/config.js'
import connectionsPlugin from '../../plugins/app/connections.js'
import corsPlugin from '../../plugins/external/cors.js'
import databaseWatchPlugin from '../../plugins/app/database-watch.js'
import docsPlugin from '../../plugins/external/docs.js'
import errorsPlugin from '../../plugins/app/error-handler.js'
import healthRoutes from '../../plugins/routes/health.js'
import helmetPlugin from '../../plugins/external/helmet.js'
import metricsPlugin from '../../plugins/app/metrics.js'
import otelPlugin from '../../plugins/external/otel.js'
import rateLimitPlugin from '../../plugins/external/rate-limit.js'
import resourceRoutes from '../../plugins/routes/resources/index.js'
import requestsPlugin from '../../plugins/app/requests.js'
import resourcesPlugin from '../../plugins/app/resources.js'
import requestIdPlugin from '../../plugins/app/request-log.js'
import schemasPlugin from '../../plugins/app/schemas.js'
import storePlugin from '../../plugins/app/open-store.js'
import tenantStorePlugin from '../../plugins/app/sandbox-tenants.js'
import underPressurePlugin from '../../plugins/external/under-pressure.js'
import webhooksPlugin from '../../plugins/app/webhooks.js'
import webhooksRoutes from '../../plugins/routes/webhooks/index.js'
import type { ApiLoadOptions } from '../webhooks/api-load.js'
import type { RequestFunction } from '../webhooks/deliver.js'
import type { Resolver } from '../webhooks/url-policy.js'
import type { Config } from '../config/load-config.js'
import { fastifyOptions } from './fastify-options.js'
import type { ResourceDefinition } from '../resources/definition.js'
import { RESOURCES } from '../resources/index.js'

export interface BuildOptions {
  logStream?: { write (line: string): void }
  webhookRequest?: RequestFunction
  webhookLoad?: ApiLoadOptions
  /** Tests answer from a table: no DNS. */
  webhookResolve?: Resolver
  /** Tests move the sandbox's clock instead of waiting. */
  sandboxNow?: () => number
  /** In the document's order; tests declare others. */
  resources?: readonly ResourceDefinition[]
}

/** Builds the whole service from its plugins; tests `inject`, server.ts listens (see docs/architecture.md). */
export async function buildApp (config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const resources = options.resources ?? RESOURCES
  const app = Fastify(fastifyOptions(config, options.logStream)).withTypeProvider<TypeBoxTypeProvider>()

  try {
    await registerPlugins(app, config, resources, options)
  } catch (err) {
    // What did start stops: a caller that catches the error has no handle holding its process open.
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
