import { ref } from '../../../src/schemas/ref.js'
import { eventTypeCatalog } from '../../../src/schemas/webhook-events.js'
import { eventSubjectsOf } from '../../../src/webhooks/events.js'
import { webhooksErrorResponses, webhooksRoute, type WebhooksApp } from './shared.js'

/** `GET /webhooks/event-types`: the event type catalog. */
export default async function listWebhookEventTypesRoute (app: WebhooksApp): Promise<void> {
  const catalog = eventTypeCatalog(app.resources)
  app.get('/webhooks/event-types', webhooksRoute({
    operationId: 'listWebhookEventTypes',
    summary: 'List webhook event types',
    description:
      'Every event type a receiver can get, with what it means and the JSON Schema of its body: the ' +
      `${eventSubjectsOf(app.resources)} ` +
      'events a subscription asks for in `events`, and `webhook.test` (sent by `POST /webhooks/{id}/test` only).',
    response: {
      200: ref(app.webhookSchemas.WebhookEventTypeListSchema, { description: 'The event types' }),
      ...webhooksErrorResponses({})
    }
  }), async () => catalog)
}
