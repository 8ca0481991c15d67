import AjvCompiler from '@fastify/ajv-compiler'
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify'
import fp from 'fastify-plugin'
import { int64Format } from '../../src/schemas/int64.js'
import { ErrorSchema } from '../../src/schemas/error.js'
import {
  RecoverWebhookSchema, RotateWebhookSecretSchema, WebhookRecoverySchema, WebhookTestResultSchema, WebhookSecretSchema,
  webhookSchemasOf
} from '../../src/schemas/webhook.js'
import { deliverySchemasOf, WebhookDeliveryAttemptSchema } from '../../src/schemas/webhook-delivery.js'
import { eventTypesOf } from '../../src/webhooks/events.js'
import { webhookEventSchemas } from '../../src/schemas/webhook-events.js'

/**
 * Registers the shared schemas at the root, so routes `$ref` them, the serializer compiles them
 * once, and the OpenAPI document names them under `components/schemas`.
 */
export default fp(async function schemasPlugin (app) {
  app.addSchema(ErrorSchema)
  for (const { schemas } of app.resources) {
    for (const schema of [schemas.representation, schemas.list, schemas.create, schemas.replace, schemas.patch]) {
      app.addSchema(schema)
    }
  }
  // Those naming event types list the app's resources' ones.
  const {
    WebhookSchema, WebhookWithSecretSchema, WebhookListSchema, NewWebhookSchema, WebhookPatchSchema,
    WebhookEventTypeListSchema
  } = webhookSchemasOf(app.resources)
  const { WebhookDeliverySchema, WebhookDeliveryDetailSchema, WebhookDeliveryListSchema } =
    deliverySchemasOf(eventTypesOf(app.resources))
  app.addSchema(WebhookSchema)
  app.addSchema(WebhookWithSecretSchema)
  app.addSchema(WebhookSecretSchema)
  app.addSchema(RotateWebhookSecretSchema)
  app.addSchema(WebhookListSchema)
  app.addSchema(NewWebhookSchema)
  app.addSchema(WebhookPatchSchema)
  app.addSchema(WebhookDeliverySchema)
  app.addSchema(WebhookDeliveryAttemptSchema)
  app.addSchema(WebhookDeliveryDetailSchema)
  app.addSchema(RecoverWebhookSchema)
  app.addSchema(WebhookRecoverySchema)
  app.addSchema(WebhookTestResultSchema)
  app.addSchema(WebhookEventTypeListSchema)
  app.addSchema(WebhookDeliveryListSchema)
  // Only the OpenAPI `webhooks` section refers to these: the bodies receivers get.
  for (const schema of webhookEventSchemas(app.resources)) app.addSchema(schema)
}, { name: 'schemas', dependencies: ['resources'] })

/** Ajv options of the service: unknown fields are 400s, and `int64` reads canonical int64 strings. */
export const ajvOptions: NonNullable<FastifyServerOptions['ajv']> = {
  // An unknown field is a 400 that names it, not silently dropped.
  customOptions: { removeAdditional: false },
  // After ajv-formats, whose own `int64` only checks numbers: ours reads canonical int64 strings.
  onCreate: (ajv) => { ajv.addFormat('int64', int64Format) }
}

type BuildValidator = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']
>
type RouteValidatorCompiler = FastifySchemaCompiler<unknown>

/**
 * Query strings, path parameters and headers arrive as text, so their validator coerces (`'5'` → 5).
 * A JSON body already carries its types, so its validator does not: `{"name": 5}` or `{"id": true}`
 * are 400s rather than a name "5" and a plant 1.
 */
export function validatorWithoutBodyCoercion (): BuildValidator {
  const fromPool = AjvCompiler()
  const build = (...[externalSchemas, options]: Parameters<BuildValidator>): RouteValidatorCompiler => {
    const coercing = fromPool(externalSchemas, options) as unknown as RouteValidatorCompiler
    const exact = fromPool(externalSchemas, {
      ...options,
      customOptions: { ...(options as { customOptions?: object } | undefined)?.customOptions, coerceTypes: false }
    } as Parameters<BuildValidator>[1]) as unknown as RouteValidatorCompiler
    return (route) => (route.httpPart === 'body' ? exact : coercing)(route)
  }
  return build as unknown as BuildValidator
}
