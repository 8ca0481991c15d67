import { deliveryLinkHeader } from '../../../src/schemas/headers.js'
import { LIST_LIMIT_DEFAULT } from '../../../src/schemas/paging.js'
import { ref } from '../../../src/schemas/ref.js'
import { WebhookParamsSchema } from '../../../src/schemas/webhook.js'
import { deliveryListQuerySchema } from '../../../src/schemas/webhook-delivery.js'
import { canonicalLimit, linkNextPage } from '../paging.js'
import { ownerOf, WEBHOOK_ERRORS, webhooksErrorResponses, webhooksRoute, type WebhooksApp } from './shared.js'

/** `GET /webhooks/{id}/deliveries`: a subscription's recent deliveries, newest first. */
export default async function listWebhookDeliveriesRoute (app: WebhooksApp): Promise<void> {
  app.get('/webhooks/:id/deliveries', {
    ...webhooksRoute({
      operationId: 'listWebhookDeliveries',
      summary: 'List webhook deliveries',
      description:
        'The deliveries of the subscription with this id, newest first, at most `limit` of them, each with the ' +
        'outcome of its latest attempt. When older ones follow, a `Link: <…>; rel="next"` header gives the next ' +
        'page (keyset pagination on `before`; the filters carry over). `status` and `eventType` narrow the list. ' +
        '`GET /webhooks/{id}/deliveries/{deliveryId}` has one delivery with its event and every attempt. Finished ' +
        'deliveries are kept for WEBHOOK_RETENTION_MS (7 days by default).',
      params: WebhookParamsSchema,
      querystring: deliveryListQuerySchema(app.eventTypes),
      response: {
        200: ref(app.webhookSchemas.WebhookDeliveryListSchema, {
          description: 'A page of deliveries, newest first',
          headers: deliveryLinkHeader
        }),
        ...webhooksErrorResponses({
          400:
            'The id is not a signed 64-bit integer, or a query parameter is invalid or unknown (limit outside ' +
            '1..100 or not a canonical integer, before not an int64, an unknown status or event type), or a name ' +
            'or value is not percent-encoded UTF-8',
          404: WEBHOOK_ERRORS.notFound
        })
      }
    }),
    preValidation: canonicalLimit
  }, async (request, reply) => {
    const { id } = request.params
    const { limit = LIST_LIMIT_DEFAULT, before, status, eventType } = request.query
    const { deliveries, hasMore } = await request.webhooks.listDeliveries(ownerOf(request), BigInt(id), {
      limit,
      ...(before !== undefined && { before: BigInt(before) }),
      ...(status !== undefined && { status }),
      ...(eventType !== undefined && { eventType })
    })
    const last = deliveries.at(-1)
    if (hasMore && last !== undefined) {
      const filters = (status === undefined ? '' : `&status=${status}`) +
        (eventType === undefined ? '' : `&eventType=${eventType}`)
      linkNextPage(reply, `/webhooks/${id}/deliveries?limit=${limit}${filters}&before=${last.id}`)
    }
    return deliveries
  })
}
