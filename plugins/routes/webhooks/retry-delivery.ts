import { ref } from '../../../src/schemas/ref.js'
import { WebhookDeliveryParamsSchema } from '../../../src/schemas/webhook-delivery.js'
import { checkEventScopes, ownerOf, webhooksErrorResponses, webhooksRoute, type WebhooksApp } from './shared.js'

/** `POST /webhooks/{id}/deliveries/{deliveryId}/retry`: attempts a delivery again now. */
export default async function retryWebhookDeliveryRoute (app: WebhooksApp): Promise<void> {
  app.post('/webhooks/:id/deliveries/:deliveryId/retry', webhooksRoute({
    operationId: 'retryWebhookDelivery',
    summary: 'Retry a webhook delivery',
    description:
      'Makes the delivery pending and due now, whatever its status (a failed one gets one more attempt), and ' +
      'answers 202 with it: the attempt itself happens in the background (list the deliveries to see its ' +
      'outcome). The subscription must be enabled, else 409. The token needs the read scope of the ' +
      "delivery's event type, as to subscribe (403 naming the scope).",
    params: WebhookDeliveryParamsSchema,
    response: {
      202: ref(app.webhookSchemas.WebhookDeliverySchema, { description: 'The delivery is due now' }),
      ...webhooksErrorResponses({
        400: 'An id is not a signed 64-bit integer, or the request has a body',
        404: 'This token has no subscription with this id, or the subscription has no delivery with this id',
        409: 'The subscription is disabled: enable it (PATCH `"disabled": false`) to retry its deliveries'
      })
    }
  }), async (request, reply) => {
    const id = BigInt(request.params.id)
    const deliveryId = BigInt(request.params.deliveryId)
    const owner = ownerOf(request)
    checkEventScopes(request, [(await request.webhooks.getDelivery(owner, id, deliveryId)).eventType])
    return reply.code(202).send(await request.webhooks.retryDelivery(owner, id, deliveryId))
  })
}
