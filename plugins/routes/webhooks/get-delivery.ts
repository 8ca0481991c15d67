import { ref } from '../../../src/schemas/ref.js'
import { WebhookDeliveryParamsSchema } from '../../../src/schemas/webhook-delivery.js'
import { checkEventScopes, ownerOf, webhooksErrorResponses, webhooksRoute, type WebhooksApp } from './shared.js'

/** `GET /webhooks/{id}/deliveries/{deliveryId}`: one delivery, its event as sent and every attempt. */
export default async function getWebhookDeliveryRoute (app: WebhooksApp): Promise<void> {
  app.get('/webhooks/:id/deliveries/:deliveryId', webhooksRoute({
    operationId: 'getWebhookDelivery',
    summary: 'Get a webhook delivery',
    description:
      'The delivery with this id of the subscription with this id: its status, its event as every attempt sent ' +
      'it (`webhookId`, `eventType`, the exact `payload`), and every attempt so far, oldest first, each with ' +
      "when it started, how long it took, the status code or the error, and the first 1 KiB of the answer's body. " +
      'The payload carries the representation: the token needs the read scope of its event type, as to ' +
      'subscribe (403 naming the scope).',
    params: WebhookDeliveryParamsSchema,
    response: {
      200: ref(app.webhookSchemas.WebhookDeliveryDetailSchema, { description: 'The delivery' }),
      ...webhooksErrorResponses({
        400: 'An id is not a signed 64-bit integer',
        404: 'This token has no subscription with this id, or the subscription has no delivery with this id'
      })
    }
  }), async (request) => {
    const { id, deliveryId } = request.params
    const delivery = await request.webhooks.getDelivery(ownerOf(request), BigInt(id), BigInt(deliveryId))
    checkEventScopes(request, [delivery.eventType])
    return delivery
  })
}
