import { ref } from '../../../src/schemas/ref.js'
import { RotateWebhookSecretSchema, WebhookParamsSchema } from '../../../src/schemas/webhook.js'
import { ownerOf, WEBHOOK_ERRORS, webhooksErrorResponses, webhooksRoute, type WebhooksApp } from './shared.js'

/** `POST /webhooks/{id}/rotate-secret`: a new signing secret, random or the integrator's. */
export default async function rotateWebhookSecretRoute (app: WebhooksApp): Promise<void> {
  app.post('/webhooks/:id/rotate-secret', {
    ...webhooksRoute({
      operationId: 'rotateWebhookSecret',
      summary: 'Rotate a webhook secret',
      description:
        "Gives the subscription a new signing secret (the body's `secret`, or a random one without it) and " +
        'answers with the subscription carrying it. Every secret a rotation replaces keeps signing deliveries for ' +
        '24 hours after it was replaced (one more `v1,` signature each), so receivers can switch over without ' +
        'losing an event: two rotations within a day give three signatures. At most 10 replaced secrets sign at ' +
        'once.',
      params: WebhookParamsSchema,
      body: ref(RotateWebhookSecretSchema),
      response: {
        200: ref(app.webhookSchemas.WebhookWithSecretSchema, { description: 'The subscription with its new secret' }),
        ...webhooksErrorResponses({
          400:
            `${WEBHOOK_ERRORS.badId}, or the body is not a RotateWebhookSecret (a secret not \`whsec_\` and 24 to ` +
            '64 bytes in base64, or one byte repeated)',
          404: WEBHOOK_ERRORS.notFound,
          413: WEBHOOK_ERRORS.tooLarge,
          415: 'The body is not JSON'
        })
      }
    }),
    // No body at all rotates to a random secret, as before the body existed.
    preValidation: async (request) => {
      request.body ??= {}
    }
  }, async (request) =>
    await request.webhooks.rotateSecret(ownerOf(request), BigInt(request.params.id), request.body?.secret))
}
