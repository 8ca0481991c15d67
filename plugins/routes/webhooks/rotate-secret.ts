import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { WebhookParamsSchema } from '../../../src/schemas/webhook.js'
import { ownerOf, WEBHOOK_ERRORS, webhookResponse, webhooksErrorResponses } from './shared.js'

/** `POST /webhooks/{id}/rotate-secret`: a new signing secret. */
const rotateWebhookSecretRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/webhooks/:id/rotate-secret', {
    config: { scope: 'webhooks' },
    schema: {
      operationId: 'rotateWebhookSecret',
      summary: 'Rotate a webhook secret',
      description: 'Gives the subscription a new signing secret and answers with the subscription carrying it. For the ' +
        'next 24 hours every delivery is signed with both the new and the previous secret (two `v1,` signatures), so ' +
        'the receiver can switch over without losing an event; rotating again within that time drops the oldest secret.',
      tags: ['webhooks'],
      params: WebhookParamsSchema,
      response: {
        200: webhookResponse('The subscription with its new secret'),
        ...webhooksErrorResponses({ 400: `${WEBHOOK_ERRORS.badId}, or the request has a body`, 404: WEBHOOK_ERRORS.notFound })
      }
    }
  }, async (request) => await app.webhooks.rotateSecret(ownerOf(request), BigInt(request.params.id)))
}

export default rotateWebhookSecretRoute
