import { ref } from '../../../src/schemas/ref.js'
import { parseDateTime } from '../../../src/store/iso-time.js'
import { RecoverWebhookSchema, WebhookParamsSchema, WebhookRecoverySchema } from '../../../src/schemas/webhook.js'
import {
  checkSubscriptionScopes, ownerOf, READ_SCOPES_TEXT, WEBHOOK_ERRORS, webhooksErrorResponses, webhooksRoute,
  type WebhooksApp
} from './shared.js'

/** `POST /webhooks/{id}/recover`: attempts the failed deliveries since a time again. */
export default async function recoverWebhookRoute (app: WebhooksApp): Promise<void> {
  app.post('/webhooks/:id/recover', webhooksRoute({
    operationId: 'recoverWebhook',
    summary: 'Recover failed webhook deliveries',
    description:
      'Makes every failed delivery of the subscription created at `since` or later pending and due now (one more ' +
      'attempt each, as a retry does) and answers 202 with how many: after an outage of the receiver, this ' +
      "resends what it missed. The attempts happen in the background; a disabled subscription's wait until it is " +
      `enabled. ${READ_SCOPES_TEXT}`,
    params: WebhookParamsSchema,
    body: ref(RecoverWebhookSchema),
    response: {
      202: ref(WebhookRecoverySchema, { description: 'The failed deliveries since then are due now' }),
      ...webhooksErrorResponses({
        400: `${WEBHOOK_ERRORS.badId}, or the body is not a RecoverWebhook (since not an RFC 3339 date-time)`,
        404: WEBHOOK_ERRORS.notFound,
        413: WEBHOOK_ERRORS.tooLarge,
        415: 'The body is not JSON'
      })
    }
  }), async (request, reply) => {
    const id = BigInt(request.params.id)
    await checkSubscriptionScopes(request, id)
    const recovery = await request.webhooks.recoverDeliveries(ownerOf(request), id, parseDateTime(request.body.since))
    return reply.code(202).send(recovery)
  })
}
