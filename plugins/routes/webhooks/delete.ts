import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { WebhookParamsSchema } from '../../../src/schemas/webhook.js'
import { ownerOf, WEBHOOK_ERRORS, webhooksErrorResponses } from './shared.js'

/** `DELETE /webhooks/{id}`: 204 with an empty body. */
const deleteWebhookRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.delete(
    '/webhooks/:id',
    {
      config: { scope: 'webhooks' },
      schema: {
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook subscription',
        description:
          'Deletes the subscription with this id and its deliveries (pending ones are never sent). Answers 204 with ' +
          'an empty body.',
        tags: ['webhooks'],
        params: WebhookParamsSchema,
        response: {
          204: Type.Null({ description: 'The subscription was deleted' }),
          ...webhooksErrorResponses({ 400: WEBHOOK_ERRORS.badId, 404: WEBHOOK_ERRORS.notFound })
        }
      }
    },
    async (request, reply) => {
      await request.webhooks.deleteSubscription(ownerOf(request), BigInt(request.params.id))
      return reply.code(204).send(null)
    }
  )
}

export default deleteWebhookRoute
