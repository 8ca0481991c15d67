import { webhookLinkHeader } from '../../../src/schemas/headers.js'
import { LIST_LIMIT_DEFAULT } from '../../../src/schemas/paging.js'
import { ref } from '../../../src/schemas/ref.js'
import { WebhookListQuerySchema } from '../../../src/schemas/webhook.js'
import { canonicalLimit, linkNextPage } from '../paging.js'
import { ownerOf, webhooksErrorResponses, webhooksRoute, type WebhooksApp } from './shared.js'

/** `GET /webhooks`: a page of the token's subscriptions in id order, keyset-paginated. */
export default async function listWebhooksRoute (app: WebhooksApp): Promise<void> {
  app.get('/webhooks', {
    ...webhooksRoute({
      operationId: 'listWebhooks',
      summary: 'List webhook subscriptions',
      description:
        'The subscriptions of this token, ordered by id, at most `limit` of them. When more follow, a ' +
        '`Link: <…>; rel="next"` header gives the next page (keyset pagination on `after`, as for plants).',
      querystring: WebhookListQuerySchema,
      response: {
        200: ref(app.webhookSchemas.WebhookListSchema, {
          description: 'A page of subscriptions, ordered by id',
          headers: webhookLinkHeader
        }),
        ...webhooksErrorResponses({
          400: 'A query parameter is invalid or unknown (limit outside 1..100 or not a canonical integer, after ' +
            'not an int64), or a name or value is not percent-encoded UTF-8'
        })
      }
    }),
    preValidation: canonicalLimit
  }, async (request, reply) => {
    const { limit = LIST_LIMIT_DEFAULT, after } = request.query
    const { subscriptions, hasMore } = await request.webhooks.listSubscriptions(ownerOf(request), {
      limit,
      ...(after !== undefined && { after: BigInt(after) })
    })
    const last = subscriptions.at(-1)
    if (hasMore && last !== undefined) linkNextPage(reply, `/webhooks?limit=${limit}&after=${last.id}`)
    return subscriptions
  })
}
