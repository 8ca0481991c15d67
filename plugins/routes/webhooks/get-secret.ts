import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ref } from '../../../src/schemas/ref.js'
import { WebhookParamsSchema, WebhookSecretSchema } from '../../../src/schemas/webhook.js'
import { ownerOf, WEBHOOK_ERRORS, webhooksErrorResponses } from './shared.js'

/** `GET /webhooks/{id}/secret`: the subscription's current signing secret. */
const getWebhookSecretRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/webhooks/:id/secret', {
    config: { scope: 'webhooks' },
    schema: {
      operationId: 'getWebhookSecret',
      summary: 'Get a webhook secret',
      description: 'The current signing secret of the subscription with this id, when this token owns it; else 404. ' +
        'The subscription\'s other answers (GET, list, PATCH) leave it out.',
      tags: ['webhooks'],
      params: WebhookParamsSchema,
      response: {
        200: ref(WebhookSecretSchema, { description: 'The current secret' }),
        ...webhooksErrorResponses({ 400: WEBHOOK_ERRORS.badId, 404: WEBHOOK_ERRORS.notFound })
      }
    }
  }, async (request) => await request.webhooks.getSecret(ownerOf(request), BigInt(request.params.id)))
}

export default getWebhookSecretRoute
