import { ref } from '../../../src/schemas/ref.js'
import { WebhookParamsSchema, WebhookSecretSchema } from '../../../src/schemas/webhook.js'
import { ownerOf, WEBHOOK_ERRORS, webhooksErrorResponses, webhooksRoute, type WebhooksApp } from './shared.js'

/** `GET /webhooks/{id}/secret`: the subscription's current signing secret. */
export default async function getWebhookSecretRoute (app: WebhooksApp): Promise<void> {
  app.get('/webhooks/:id/secret', webhooksRoute({
    operationId: 'getWebhookSecret',
    summary: 'Get a webhook secret',
    description: 'The current signing secret of the subscription with this id, when this token owns it; else 404. ' +
      'The subscription\'s other answers (GET, list, PATCH) leave it out.',
    params: WebhookParamsSchema,
    response: {
      200: ref(WebhookSecretSchema, { description: 'The current secret' }),
      ...webhooksErrorResponses({ 400: WEBHOOK_ERRORS.badId, 404: WEBHOOK_ERRORS.notFound })
    }
  }), async (request) => await request.webhooks.getSecret(ownerOf(request), BigInt(request.params.id)))
}
