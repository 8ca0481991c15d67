import { isoTime } from '../../../src/store/iso-time.js'
import { ref } from '../../../src/schemas/ref.js'
import { WebhookParamsSchema, WebhookTestResultSchema } from '../../../src/schemas/webhook.js'
import {
  checkSubscriptionScopes, ownerOf, READ_SCOPES_TEXT, WEBHOOK_ERRORS, webhooksErrorResponses, webhooksRoute,
  type WebhooksApp
} from './shared.js'

/** `POST /webhooks/{id}/test`: a signed test event, sent now, and how it went. */
export default async function testWebhookRoute (app: WebhooksApp): Promise<void> {
  app.post('/webhooks/:id/test', webhooksRoute({
    operationId: 'testWebhook',
    summary: 'Send a test event',
    description:
      'Sends a `webhook.test` event (`{ type, timestamp, data: { subscriptionId } }`), signed like any ' +
      'delivery (with the current secret and every replaced one still honoured), to its URL now, whether it is ' +
      "enabled or not, and answers with the attempt's outcome once it is over (at most WEBHOOK_TIMEOUT_MS). " +
      "Nothing is stored or retried. It takes a delivery slot and keeps the deliveries' pace: with none free " +
      `within a second, a 503 with Retry-After. ${READ_SCOPES_TEXT}`,
    params: WebhookParamsSchema,
    response: {
      200: ref(WebhookTestResultSchema, {
        description: 'The attempt was made: `succeeded` says whether the receiver answered 2xx'
      }),
      ...webhooksErrorResponses({
        400: `${WEBHOOK_ERRORS.badId}, or the request has a body`,
        404: WEBHOOK_ERRORS.notFound,
        503: 'No delivery slot is free for the test now, or deliveries are paced (with Retry-After)'
      })
    }
  }), async (request) => {
    await checkSubscriptionScopes(request, BigInt(request.params.id))
    const { at, ...attempt } = await request.webhooks.sendTest(ownerOf(request), BigInt(request.params.id))
    return { ...attempt, at: isoTime(at) }
  })
}
