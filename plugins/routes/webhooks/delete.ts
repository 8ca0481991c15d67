import { Type } from '@sinclair/typebox'
import { WebhookParamsSchema } from '../../../src/schemas/webhook.js'
import { ownerOf, WEBHOOK_ERRORS, webhooksErrorResponses, webhooksRoute, type WebhooksApp } from './shared.js'

/** `DELETE /webhooks/{id}`: 204 with an empty body. */
export default async function deleteWebhookRoute (app: WebhooksApp): Promise<void> {
  app.delete('/webhooks/:id', webhooksRoute({
    operationId: 'deleteWebhook',
    summary: 'Delete a webhook subscription',
    description:
      'Deletes the subscription with this id and its deliveries (pending ones are never sent). Answers 204 with ' +
      'an empty body.',
    params: WebhookParamsSchema,
    response: {
      204: Type.Null({ description: 'The subscription was deleted' }),
      ...webhooksErrorResponses({ 400: WEBHOOK_ERRORS.badId, 404: WEBHOOK_ERRORS.notFound })
    }
  }), async (request, reply) => {
    await request.webhooks.deleteSubscription(ownerOf(request), BigInt(request.params.id))
    return reply.code(204).send(null)
  })
}
