import fp from 'fastify-plugin'
import type { RequestFunction } from '../../src/webhooks/deliver.js'
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js'
import { WebhookService } from '../../src/webhooks/service.js'
import { defaultAddressPolicy } from '../../src/webhooks/url-policy.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Webhook subscriptions, scoped by owner (the routes under /webhooks call it). */
    webhooks: WebhookService
  }
}

export interface WebhooksPluginOptions {
  /** Replaces http(s).request for deliveries (tests keep them on loopback; see test/helpers/app.ts). */
  request?: RequestFunction
}

/**
 * Webhooks: the subscription service the routes use, and the dispatcher that delivers what the
 * store's outbox holds, off the request path (src/webhooks/dispatcher.ts). The dispatcher starts
 * when the app is ready. On close it stops claiming at once (preClose, while requests drain) and
 * lets attempts in flight finish within SHUTDOWN_GRACE_MS; what is still running then is given back
 * untouched, to be delivered after a restart or by another instance. Its onClose runs before the
 * store's (Fastify closes plugins in reverse order), so the store is never closed under it.
 */
export default fp<WebhooksPluginOptions>(async function webhooksPlugin (app, options) {
  const { config, store, log } = app
  const settings = config.webhooks
  const policy = defaultAddressPolicy(settings.allowPrivate)
  const dispatcher = new WebhookDispatcher({
    store: store.webhooks,
    policy,
    timeoutMs: settings.timeoutMs,
    schedule: settings.schedule,
    concurrency: settings.concurrency,
    perSubscription: settings.perSubscription,
    disableAfterMs: settings.disableAfterMs,
    retentionMs: settings.retentionMs,
    pollIntervalMs: settings.pollIntervalMs,
    ...(options.request !== undefined && { request: options.request })
  })

  dispatcher.on('attempt', (attempt) => {
    const details = {
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
    else log.warn(details, attempt.status === 'failed' ? 'webhook delivery failed for good' : 'webhook delivery failed; retrying later')
  })
  dispatcher.on('subscription-disabled', ({ subscriptionId, reason }) => {
    log.warn({ webhook: { subscriptionId: String(subscriptionId), reason } },
      reason === 'gone' ? 'webhook subscription disabled: its receiver answered 410 Gone' : 'webhook subscription disabled: its deliveries kept failing')
  })
  dispatcher.on('pruned', ({ deleted }) => { log.info({ webhook: { deleted } }, 'old webhook deliveries pruned') })
  dispatcher.on('store-error', ({ operation, error }) => {
    log.error({ err: error, webhook: { operation } }, 'webhook dispatcher: the database failed; deliveries wait and are retried')
  })

  app.decorate('webhooks', new WebhookService({ store: store.webhooks, policy, onDue: () => { dispatcher.wake() } }))

  app.addHook('onReady', async () => {
    // SQLite is one process per file: what is still leased now, a killed process was attempting.
    const released = await store.webhooks.releaseOrphanedLeases?.()
    if (released !== undefined && released > 0) {
      log.warn({ webhook: { released } }, 'webhook deliveries left in flight by a stopped process are due again')
    }
    await dispatcher.start()
  })
  let stopping: Promise<void> | undefined
  const stop = async (): Promise<void> => { await (stopping ??= dispatcher.stop(config.shutdownGraceMs)) }
  app.addHook('preClose', (done) => {
    // Not awaited: requests drain meanwhile. onClose waits for it.
    stop().catch(() => {})
    done()
  })
  app.addHook('onClose', async () => { await stop() })
}, { name: 'webhooks', dependencies: ['config', 'store'] })
