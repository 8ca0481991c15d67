import { MERGE_PATCH } from '../../http/json-body.js'
import { ref } from '../../../src/schemas/ref.js'
import { WebhookParamsSchema } from '../../../src/schemas/webhook.js'
import {
  checkEventScopes, checkSubscriptionScopes, eventScopesText, ownerOf, WEBHOOK_ERRORS, webhookResponse,
  webhooksErrorResponses, webhooksRoute, type WebhooksApp
} from './shared.js'

/** `PATCH /webhooks/{id}`: a JSON merge patch (RFC 7396) of a subscription. */
export default async function updateWebhookRoute (app: WebhooksApp): Promise<void> {
  app.patch('/webhooks/:id', webhooksRoute({
    operationId: 'updateWebhook',
    summary: 'Update a webhook subscription',
    description:
      'Applies a JSON merge patch (RFC 7396) to the subscription with this id: a field that is absent is kept, ' +
      '`"description": null` removes the description. A new `url` is checked as on create. `"disabled": false` ' +
      'enables a disabled subscription again (its pending deliveries resume). Sent as `application/merge-patch+json` ' +
      `or plain JSON. A new \`events\` list is checked as on create: ${eventScopesText(app.resources)} A new ` +
      '`url`, or `"disabled": false`, needs the read scopes of the event types the subscription has (403 ' +
      'naming the scope).',
    // Only the PATCH routes read merge patches (plugins/app/requests.ts reads what `consumes` lists).
    consumes: [MERGE_PATCH, 'application/json'],
    params: WebhookParamsSchema,
    body: ref(app.webhookSchemas.WebhookPatchSchema),
    response: {
      200: webhookResponse(app, 'The subscription as updated'),
      ...webhooksErrorResponses({
        400: 'The id is not a signed 64-bit integer, the body is not a valid WebhookPatch (the message names the ' +
          `field), or: ${WEBHOOK_ERRORS.badUrl}`,
        404: WEBHOOK_ERRORS.notFound,
        413: WEBHOOK_ERRORS.tooLarge,
        415: 'The body is neither a merge patch nor JSON'
      })
    }
  }), async (request) => {
    const { events, url, disabled } = request.body
    const id = BigInt(request.params.id)
    if (events !== undefined) checkEventScopes(request, events)
    else if (url !== undefined || disabled === false) await checkSubscriptionScopes(request, id)
    return await request.webhooks.updateSubscription(ownerOf(request), id, request.body)
  })
}
