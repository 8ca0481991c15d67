import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { WebhookParamsSchema } from '../../../src/schemas/webhook.js'
import { ownerOf, WEBHOOK_ERRORS, webhookResponse, webhooksErrorResponses } from './shared.js'

/** `GET /webhooks/{id}`: one of the token's subscriptions. */
const getWebhookRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/webhooks/:id',
    {
      config: { scope: 'webhooks' },
      schema: {
        operationId: 'getWebhook',
        summary: 'Get a webhook subscription',
        description:
          'The subscription with this id, when this token owns it; else 404. Its signing secret is not in it: ' +
          '`GET /webhooks/{id}/secret` answers that.',
        tags: ['webhooks'],
        params: WebhookParamsSchema,
        response: {
          200: webhookResponse(app, 'The subscription'),
          ...webhooksErrorResponses({ 400: WEBHOOK_ERRORS.badId, 404: WEBHOOK_ERRORS.notFound })
        }
      }
    },
    async (request) => await request.webhooks.getSubscription(ownerOf(request), BigInt(request.params.id))
  )
}

export default getWebhookRoute
