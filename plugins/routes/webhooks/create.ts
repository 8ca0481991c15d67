import { webhookLocationHeader } from '../../../src/schemas/headers.js'
import { ref } from '../../../src/schemas/ref.js'
import { eventSubjectsOf } from '../../../src/webhooks/events.js'
import { defaultEventsText } from '../../../src/schemas/webhook.js'
import {
  eventScopesText, eventsToSubscribe, ownerOf, WEBHOOK_ERRORS, webhooksErrorResponses, webhooksRoute, type WebhooksApp
} from './shared.js'

/** `POST /webhooks`: subscribes a URL to the resources' events. */
export default async function createWebhookRoute (app: WebhooksApp): Promise<void> {
  app.post('/webhooks', webhooksRoute({
    operationId: 'createWebhook',
    summary: 'Create a webhook subscription',
    description:
      `Subscribes a URL to ${eventSubjectsOf(app.resources)} events ` +
      `(${defaultEventsText(app.resources)} unless \`events\` narrows them) and ` +
      'answers 201 with the subscription, its signing `secret` included (the only answer besides `GET ' +
      '/webhooks/{id}/secret` and a rotation that carries it), and `Location: /webhooks/{id}`. The URL must be ' +
      'an absolute http or https URL of at most 2048 characters without credentials, whose host is (or resolves ' +
      'to) public addresses only. The subscription belongs to the token that creates it; a token may have at ' +
      'most WEBHOOK_MAX_SUBSCRIPTIONS (25 by default), and creating one more is a 409 until one is deleted. ' +
      eventScopesText(app.resources),
    body: ref(app.webhookSchemas.NewWebhookSchema),
    response: {
      201: ref(app.webhookSchemas.WebhookWithSecretSchema, {
        description: 'The subscription was created',
        headers: webhookLocationHeader
      }),
      ...webhooksErrorResponses({
        400: `The body is not a valid NewWebhook (the message names the field), or: ${WEBHOOK_ERRORS.badUrl}`,
        413: WEBHOOK_ERRORS.tooLarge,
        409: 'This token already has WEBHOOK_MAX_SUBSCRIPTIONS subscriptions (25 by default): delete one first',
        415: 'The body is not JSON'
      })
    }
  }), async (request, reply) => {
    const events = eventsToSubscribe(request, request.body.events)
    const subscription = await request.webhooks.createSubscription(ownerOf(request), { ...request.body, events })
    void reply.code(201).header('location', `/webhooks/${subscription.id}`)
    return subscription
  })
}
