import type { FastifyPluginAsync } from 'fastify'
import { requireScope } from '../../app/auth.js'
import createWebhookRoute from './create.js'
import deleteWebhookRoute from './delete.js'
import listWebhookEventTypesRoute from './event-types.js'
import getWebhookRoute from './get.js'
import getWebhookSecretRoute from './get-secret.js'
import getWebhookDeliveryRoute from './get-delivery.js'
import listWebhookDeliveriesRoute from './list-deliveries.js'
import listWebhooksRoute from './list.js'
import recoverWebhookRoute from './recover.js'
import retryWebhookDeliveryRoute from './retry-delivery.js'
import rotateWebhookSecretRoute from './rotate-secret.js'
import testWebhookRoute from './send-test.js'
import updateWebhookRoute from './update.js'

/** One operation per file; each token sees and manages only its own subscriptions. */
const webhooksRoutes: FastifyPluginAsync = async (app) => {
  app.addHook('onRequest', app.authenticate)
  app.addHook('onRoute', requireScope)
  // In the document's order.
  for (const route of [
    listWebhooksRoute, getWebhookRoute, createWebhookRoute, updateWebhookRoute, deleteWebhookRoute,
    getWebhookSecretRoute, rotateWebhookSecretRoute, listWebhookDeliveriesRoute, getWebhookDeliveryRoute,
    retryWebhookDeliveryRoute, recoverWebhookRoute, testWebhookRoute, listWebhookEventTypesRoute
  ]) await app.register(route)
}

export default webhooksRoutes
