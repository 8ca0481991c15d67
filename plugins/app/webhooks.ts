import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ApiLoadMonitor, type ApiLoadOptions } from '../../src/webhooks/api-load.js'
import { missingEventScope } from '../../src/webhooks/events.js'
import type { RequestFunction } from '../../src/webhooks/deliver.js'
import { WebhookDispatcher, type DispatcherOptions } from '../../src/webhooks/dispatcher.js'
import type { Backlog, WebhookStore } from '../../src/webhooks/store-contract.js'
import { METRIC_PREFIX, type ServiceMetrics } from './metrics.js'
import { WebhookService, type OwnerScopes } from '../../src/webhooks/service.js'
import { namedPrincipal } from '../../src/auth/tokens.js'
import { defaultAddressPolicy, type Resolver } from '../../src/webhooks/url-policy.js'
import type { EventOrigin } from '../../src/webhooks/origin.js'

declare module 'fastify' {
  interface FastifyInstance {
    webhooks: WebhookService
    /** The request id (every delivery log line carries it) and, with tracing on, the span's traceparent. */
    eventOrigin: (request: FastifyRequest) => EventOrigin
  }
}

export interface WebhooksPluginOptions {
  /** Tests keep deliveries on loopback (test/helpers/app.ts). */
  request?: RequestFunction
  load?: ApiLoadOptions
  /** Resolves webhook hosts (the system resolver by default; tests answer from a table, without DNS). */
  resolve?: Resolver
}

/**
 * The service and the dispatcher that delivers the outbox off the request path. On close it stops claiming at
 * once (preClose) and gives back what still runs after SHUTDOWN_GRACE_MS, before the store closes.
 */
export default fp<WebhooksPluginOptions>(async function webhooksPlugin (app, options) {
  const { config, store, log } = app
  // Deliveries yield to requests while the event loop is saturated by them (see ApiLoadMonitor).
  const load = new ApiLoadMonitor(options.load)
  app.addHook('onRequest', function countForWebhookLoad (_request, _reply, done) {
    load.countRequest()
    done()
  })
  const { dispatcher, service } = webhookDelivery(app, options, {
    log,
    store: store.webhooks,
    maxSubscriptions: config.webhooks.maxSubscriptions,
    allowPrivate: config.webhooks.allowPrivate,
    ownerScopes: namedTokenScopes(app),
    pacing: { apiBusy: () => load.busy }
  })
  if (app.metrics !== undefined) webhookMetrics(app.metrics, dispatcher, store.webhooks)
  app.decorate('webhooks', service)

  const { tracing } = app
  app.decorate('eventOrigin', tracing === undefined
    ? (request: FastifyRequest): EventOrigin => ({ requestId: request.id })
    : (request: FastifyRequest): EventOrigin => {
        const headers: Record<string, string> = {}
        tracing.injectTraceContext(headers)
        return { requestId: request.id, ...(headers.traceparent !== undefined && { traceparent: headers.traceparent }) }
      })

  app.addHook('onReady', async () => {
    // SQLite is one process per file: what is still leased now, a killed process was attempting.
    const released = await store.webhooks.releaseOrphanedLeases?.()
    if (released !== undefined && released > 0) {
      log.warn({ webhook: { released } }, 'webhook deliveries left in flight by a stopped process are due again')
    }
    for (const { owner, id, scope, paused } of await service.pauseUncovered()) {
      const details = { webhook: { subscriptionId: String(id), owner, scope } }
      const state = paused ? 'paused' : 'stays paused'
      log.warn(details, `webhook subscription ${state}: its token lacks a scope its events need`)
    }
    load.start()
    await dispatcher.start()
  })
  app.addHook('preClose', (done) => {
    // Not awaited: requests drain meanwhile. onClose waits for it (a second stop is the first one's).
    dispatcher.stop(config.shutdownGraceMs).catch(() => {})
    done()
  })
  app.addHook('onClose', async () => {
    await dispatcher.stop(config.shutdownGraceMs)
    load.stop()
  })
}, { name: 'webhooks', dependencies: ['config', 'resources', 'store', 'database-watch', 'tracing', 'metrics'] })

/** Named tokens' scopes are fixed until a restart. */
function namedTokenScopes (app: FastifyInstance): OwnerScopes {
  const { resources, scopeCatalog } = app
  const principals = new Map(app.config.namedTokens
    .map((token) => namedPrincipal(token))
    .map(({ id, scopes }) => [id, scopes] as const))
  return {
    owners: [...principals.keys()],
    missing: (owner, events) => {
      const held = principals.get(owner)
      return held === undefined ? undefined : missingEventScope(events, held, scopeCatalog, resources)
    }
  }
}

/**
 * A store's webhook service and dispatcher, set and logged alike: the app's, and in a sandbox each tenant's.
 * `serviceStore` is what the API calls (instrumented); the dispatcher's own calls go to `store`.
 */
export function webhookDelivery (app: FastifyInstance, options: WebhooksPluginOptions, wiring: {
  log: FastifyBaseLogger
  store: WebhookStore
  serviceStore?: WebhookStore
  maxSubscriptions: number
  allowPrivate: boolean
  /** How many attempts at once, and how they yield, over the WEBHOOK_* settings. */
  pacing: Pick<DispatcherOptions, 'concurrency' | 'perSubscription' | 'busyIntervalMs' | 'apiBusy'>
  /** Runs before the dispatcher is asked to act (a sandbox tenant's starts it then). */
  beforeUse?: () => Promise<void>
  ownerScopes?: OwnerScopes
}): { dispatcher: WebhookDispatcher, service: WebhookService } {
  const { log } = wiring
  const settings = app.config.webhooks
  const policy = {
    ...defaultAddressPolicy(wiring.allowPrivate),
    ...(options.resolve !== undefined && { resolve: options.resolve })
  }
  const dispatcher = new WebhookDispatcher({
    store: wiring.store,
    policy,
    ...settings,
    ...wiring.pacing,
    ...(options.request !== undefined && { request: options.request }),
    ...(app.tracing !== undefined && { traceAttempt: app.tracing.webhookAttempt })
  })
  dispatcher.on('attempt', (attempt) => {
    const details = {
      ...(attempt.requestId !== undefined && { reqId: attempt.requestId }),
      webhook: {
        subscriptionId: String(attempt.subscriptionId),
        deliveryId: String(attempt.deliveryId),
        messageId: attempt.messageId,
        eventType: attempt.eventType,
        attempt: attempt.attempt,
        status: attempt.status,
        ...(attempt.statusCode !== undefined && { statusCode: attempt.statusCode }),
        ...(attempt.error !== undefined && { error: attempt.error }),
        ...(attempt.nextAttemptAt !== undefined && { nextAttemptAt: new Date(attempt.nextAttemptAt).toISOString() }),
        durationMs: Math.round(attempt.durationMs * 10) / 10
      }
    }
    if (attempt.status === 'succeeded') log.info(details, 'webhook delivered')
    else if (attempt.status === 'failed') log.warn(details, 'webhook delivery failed for good')
    else log.warn(details, 'webhook delivery failed; retrying later')
  })
  dispatcher.on('subscription-disabled', ({ subscriptionId, reason }) => {
    const why = reason === 'gone' ? 'its receiver answered 410 Gone' : 'its deliveries kept failing'
    log.warn({ webhook: { subscriptionId: String(subscriptionId), reason } }, `webhook subscription disabled: ${why}`)
  })
  dispatcher.on('pruned', ({ deleted }) => { log.info({ webhook: { deleted } }, 'old webhook deliveries pruned') })
  dispatcher.on('store-error', ({ operation, error }) => {
    // Counted while the database is down, instead of a line each.
    if (!app.databaseWatch.failed('dispatcher')) return
    log.error(
      { err: error, webhook: { operation } },
      'webhook dispatcher: the database failed; deliveries wait and are retried'
    )
  })
  const service = new WebhookService({
    store: wiring.serviceStore ?? wiring.store,
    policy,
    lookupTimeoutMs: settings.timeoutMs,
    maxSubscriptions: wiring.maxSubscriptions,
    eventTypes: app.eventTypes,
    ...(wiring.ownerScopes !== undefined && { ownerScopes: wiring.ownerScopes }),
    sendTest: async (subscription) => await dispatcher.sendTest(subscription),
    onDue: () => {
      if (wiring.beforeUse === undefined) dispatcher.wake()
      else void wiring.beforeUse().then(() => { dispatcher.wake() }, () => {})
    },
    onSubscriptionsChanged: async () => {
      await wiring.beforeUse?.()
      await dispatcher.countOwners()
    }
  })
  return { dispatcher, service }
}

/** The backlog gauges read the database at each scrape: every instance reports the shared backlog. */
function webhookMetrics (
  { client, registry }: ServiceMetrics, dispatcher: WebhookDispatcher, store: WebhookStore
): void {
  const attempts = new client.Counter({
    name: `${METRIC_PREFIX}webhook_delivery_attempts_total`,
    help: 'Webhook delivery attempts by what became of the delivery: succeeded, retrying (failed, tried again ' +
      'later), failed (for good)',
    labelNames: ['outcome'],
    registers: [registry]
  })
  const OUTCOMES = { succeeded: 'succeeded', pending: 'retrying', failed: 'failed' } as const
  for (const outcome of Object.values(OUTCOMES)) attempts.inc({ outcome }, 0)
  dispatcher.on('attempt', (attempt) => { attempts.inc({ outcome: OUTCOMES[attempt.status] }) })
  const disabled = new client.Counter({
    name: `${METRIC_PREFIX}webhook_subscriptions_disabled_total`,
    help: 'Subscriptions this instance disabled: gone (the receiver answered 410) or failing (for ' +
      'WEBHOOK_DISABLE_AFTER_MS)',
    labelNames: ['reason'],
    registers: [registry]
  })
  for (const reason of ['gone', 'failing']) disabled.inc({ reason }, 0)
  dispatcher.on('subscription-disabled', ({ reason }) => { disabled.inc({ reason }) })
  registry.registerMetric(new client.Gauge({
    name: `${METRIC_PREFIX}webhook_inflight_attempts`,
    help: 'Webhook delivery attempts this instance is making now (at most WEBHOOK_CONCURRENCY)',
    registers: [],
    collect () { this.set(dispatcher.inFlight) }
  }))
  let reading: Promise<Backlog> | undefined
  const backlog = async (): Promise<Backlog> => {
    // A database that cannot answer must not fail the whole scrape: the gauges read NaN meanwhile.
    reading ??= store
      .backlog()
      .catch((): Backlog => ({ pending: Number.NaN, oldestCreatedAt: Number.NaN }))
      .finally(() => { setImmediate(() => { reading = undefined }) })
    return await reading
  }
  registry.registerMetric(new client.Gauge({
    name: `${METRIC_PREFIX}webhook_backlog_deliveries`,
    help: 'Webhook deliveries waiting (pending, of enabled subscriptions), across every instance on the database',
    registers: [],
    async collect () { this.set((await backlog()).pending) }
  }))
  registry.registerMetric(new client.Gauge({
    name: `${METRIC_PREFIX}webhook_backlog_oldest_age_seconds`,
    help: 'Age of the oldest waiting webhook delivery (0 when none waits): how far behind delivery is',
    registers: [registry],
    async collect () {
      const { oldestCreatedAt } = await backlog()
      this.set(oldestCreatedAt === undefined ? 0 : Math.max(0, (Date.now() - oldestCreatedAt) / 1000))
    }
  }))
}
