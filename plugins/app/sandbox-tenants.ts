import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { AnyResource } from '../../src/resources/index.js'
import { limitCreates } from '../../src/sandbox/quota.js'
import type { SandboxConfig } from '../../src/sandbox/settings.js'
import { tenantTrimmer } from '../../src/sandbox/storage.js'
import { TenantRegistry, type TenantBackend } from '../../src/sandbox/tenants.js'
import { isPostgresUrl } from '../../src/store/postgres/connection.js'
import type { Store } from '../../src/store/contract.js'
import { WebhookService } from '../../src/webhooks/service.js'
import { METRIC_PREFIX, type ServiceMetrics } from './metrics.js'
import { instrumented, servedResources } from './open-store.js'
import { webhookDelivery, type WebhooksPluginOptions } from './webhooks.js'

/** What a request works on: the app's store and webhooks, or in a sandbox its tenant's. */
export interface Tenant {
  store: Store
  webhooks: WebhookService
}

export interface SandboxTenant extends Tenant {
  /** Stops its dispatcher (started or not); the store is closed after. */
  stop: () => Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    /** SANDBOX=1 only: the tenants of this instance. */
    sandbox: { registry: TenantRegistry<SandboxTenant> } | undefined
  }
  interface FastifyRequest {
    /** The request's store: routes use it, never `app.store`, so a sandbox tenant sees only its own. */
    readonly store: Store
    readonly webhooks: WebhookService
    /** The sandbox tenant the request holds, released when its response is done. */
    tenant: Tenant | null
  }
}

interface TenantStoreOptions extends WebhooksPluginOptions {
  /** The sandbox's clock (tests move it instead of waiting). */
  now?: () => number
}

/** Without SANDBOX `request.store` and `request.webhooks` are the app's; with it, its token's tenant's. */
export default fp<TenantStoreOptions>(async function tenantStorePlugin (app, options) {
  const sandbox = app.config.sandbox
  app.decorateRequest('tenant', null)
  if (sandbox === undefined) {
    const { store, webhooks } = app
    app.decorate('sandbox', undefined)
    app.decorateRequest('store', { getter: () => store })
    app.decorateRequest('webhooks', { getter: () => webhooks })
    return
  }
  const outside = (): never => { throw new Error('a sandbox request reached a tenant\'s store without a tenant') }
  app.decorateRequest('store', { getter (this: FastifyRequest) { return this.tenant?.store ?? outside() } })
  app.decorateRequest('webhooks', { getter (this: FastifyRequest) { return this.tenant?.webhooks ?? outside() } })

  const registry = new TenantRegistry<SandboxTenant>({
    backend: await openBackend(app),
    maxTenants: sandbox.maxTenants,
    openTenants: sandbox.openTenants,
    openWaitMs: sandbox.openWaitMs,
    ttlMs: sandbox.ttlMs,
    start: async (key, store, created) => await startTenant(app, options, sandbox, key, store, created),
    stop: async (tenant) => {
      await tenant.stop()
      await tenant.store.close()
    },
    ...(options.now !== undefined && { now: options.now }),
    log: app.log
  })
  app.decorate('sandbox', { registry })
  if (app.metrics !== undefined) tenantMetrics(app.metrics, registry)

  // The response's end releases it, or the socket's close for a request that ends without one.
  const releases = new WeakMap<FastifyRequest, () => void>()
  app.addHook('preHandler', function openTenant (request, reply, done) {
    const key = request.principal?.id
    if (key === undefined || request.routeOptions.config.scope === undefined) {
      done()
      return
    }
    registry.acquire(key).then((lease) => {
      request.tenant = lease.tenant
      releases.set(request, lease.release)
      // A client gone while its tenant opened: no close event is left to come.
      if (reply.raw.closed) lease.release()
      else reply.raw.once('close', lease.release)
      done()
    }, done)
  })
  app.addHook('onResponse', function releaseTenant (request, _reply, done) {
    releases.get(request)?.()
    done()
  })
  app.addHook('onReady', async () => { registry.start() })
  app.addHook('onClose', async () => { await registry.close() })
}, { name: 'tenant-store', dependencies: ['config', 'resources', 'store', 'webhooks', 'auth', 'tracing', 'metrics'] })

/** Two gauges, never a series per tenant. */
function tenantMetrics ({ client, registry: metrics }: ServiceMetrics, registry: TenantRegistry<SandboxTenant>): void {
  metrics.registerMetric(new client.Gauge({
    name: `${METRIC_PREFIX}sandbox_tenants`,
    help: 'Sandbox tenants kept (every instance on the database reports the same count)',
    registers: [],
    async collect () { this.set(await registry.count().catch(() => Number.NaN)) }
  }))
  metrics.registerMetric(new client.Gauge({
    name: `${METRIC_PREFIX}sandbox_open_tenants`,
    help: 'Sandbox tenants whose store this instance has open (at most SANDBOX_OPEN_TENANTS while idle)',
    registers: [],
    collect () { this.set(registry.openCount) }
  }))
}

async function openBackend (app: FastifyInstance): Promise<TenantBackend> {
  const { config, metrics } = app
  if (isPostgresUrl(config.databaseUrl)) {
    const { createPostgresTenants } = await import('../../src/sandbox/postgres-tenants.js')
    return await createPostgresTenants({
      url: config.databaseUrl,
      resources: servedResources(app),
      poolMax: config.pgPoolMax,
      connectTimeoutMs: config.pgConnectTimeoutMs,
      statementTimeoutMs: config.pgStatementTimeoutMs,
      onIdleError: (err) => {
        app.log.warn({ err }, 'an idle sandbox database connection failed; it is replaced on next use')
      }
    })
  }
  const { createSqliteTenants } = await import('../../src/sandbox/sqlite-tenants.js')
  return await createSqliteTenants({
    databaseUrl: config.databaseUrl,
    store: {
      resources: servedResources(app),
      synchronous: config.sqliteSynchronous,
      log: app.log,
      ...(metrics !== undefined && { onCommit: metrics.groupCommit, onSync: metrics.walSync })
    }
  })
}

/** A tenant's store behind its quotas, its webhook service, and a dispatcher of its own paced to the tenant's rate. */
async function startTenant (
  app: FastifyInstance, options: WebhooksPluginOptions, sandbox: SandboxConfig,
  key: string, opened: Store, created: boolean
): Promise<SandboxTenant> {
  const observed = instrumented(app, opened)
  const trimmer = tenantTrimmer(opened, app.log)
  const limited = app.resources.map((resource) =>
    [resource.collection, trimmer.counting(
      limitCreates(observed[resource.collection as AnyResource['collection']], resource, sandbox.maxPlants))])
  const store: Store = { ...observed, ...Object.fromEntries(limited) }
  if (created) for (const plant of sandbox.seed) await opened.plants.create(plant)
  // Started once there is something to deliver (an event, a subscription's change, a retry): most tenants never do.
  let starting: Promise<void> | undefined
  let stopped = false
  const startDispatcher = async (): Promise<void> => {
    await (starting ??= (async () => {
      await opened.webhooks.releaseOrphanedLeases?.()
      if (!stopped) await dispatcher.start()
    })())
  }
  const startInBackground = (): void => {
    startDispatcher().catch((err: unknown) => {
      app.log.error({ err }, "sandbox: a tenant's webhook dispatcher could not start")
    })
  }
  const { dispatcher, service: webhooks } = webhookDelivery(app, options, {
    log: app.log.child({ tenant: key.slice(0, 12) }),
    beforeUse: startDispatcher,
    store: opened.webhooks,
    serviceStore: observed.webhooks,
    maxSubscriptions: sandbox.maxSubscriptions,
    // SANDBOX=1 refuses WEBHOOK_ALLOW_PRIVATE_URLS at load: only public receivers.
    allowPrivate: false,
    // Always paced: at most SANDBOX_WEBHOOK_ATTEMPTS_PER_MINUTE attempts, one at a time.
    pacing: {
      concurrency: 1,
      perSubscription: 1,
      apiBusy: () => true,
      busyIntervalMs: Math.ceil(60_000 / sandbox.webhookAttemptsPerMinute)
    }
  })
  const unlisten = await opened.webhooks.listen?.(startInBackground)
  if (opened.webhooks.empty === undefined || !await opened.webhooks.empty()) await startDispatcher()
  return {
    store,
    webhooks,
    stop: async () => {
      stopped = true
      await starting?.catch(() => {})
      await unlisten?.()
      await dispatcher.stop(app.config.shutdownGraceMs)
      await trimmer.flush()
    }
  }
}
