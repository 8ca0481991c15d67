import { WebhookParamsSchema } from '../../../src/schemas/webhook.js'
import {
  ownerOf, WEBHOOK_ERRORS, webhookResponse, webhooksErrorResponses, webhooksRoute, type WebhooksApp
} from './shared.js'

/** `GET /webhooks/{id}`: one of the token's subscriptions. */
export default async function getWebhookRoute (app: WebhooksApp): Promise<void> {
  app.get('/webhooks/:id', webhooksRoute({
    operationId: 'getWebhook',
    summary: 'Get a webhook subscription',
    description:
      'The subscription with this id, when this token owns it; else 404. Its signing secret is not in it: ' +
      '`GET /webhooks/{id}/secret` answers that.',
    params: WebhookParamsSchema,
    response: {
      200: webhookResponse(app, 'The subscription'),
      ...webhooksErrorResponses({ 400: WEBHOOK_ERRORS.badId, 404: WEBHOOK_ERRORS.notFound })
    }
  }), async (request) => await request.webhooks.getSubscription(ownerOf(request), BigInt(request.params.id)))
}
