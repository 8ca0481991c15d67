import AjvCompiler from '@fastify/ajv-compiler'
import SerializerSelector from '@fastify/fast-json-stringify-compiler'
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify'
import fp from 'fastify-plugin'
import { int64Format } from '../../src/schemas/int64.js'
import { ErrorSchema } from '../../src/schemas/error.js'
import {
  RecoverWebhookSchema, RotateWebhookSecretSchema, WebhookRecoverySchema, WebhookTestResultSchema, WebhookSecretSchema,
  webhookSchemasOf
} from '../../src/schemas/webhook.js'
import { deliverySchemasOf, WebhookDeliveryAttemptSchema } from '../../src/schemas/webhook-delivery.js'
import { webhookEventSchemas } from '../../src/schemas/webhook-events.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The shared webhook schemas that name the app's event types: routes `ref` these. */
    webhookSchemas: ReturnType<typeof webhookSchemasOf> & ReturnType<typeof deliverySchemasOf>
  }
}

/** At the root: routes `$ref` them, the serializer compiles them once, the document names them. */
export default fp(async function schemasPlugin (app) {
  app.addSchema(ErrorSchema)
  for (const { schemas } of app.resources) {
    for (const schema of [schemas.representation, schemas.list, schemas.create, schemas.replace, schemas.patch]) {
      app.addSchema(schema)
    }
  }
  // Those naming event types list the app's resources' ones. Added in the order of components/schemas.
  const named = { ...webhookSchemasOf(app.resources), ...deliverySchemasOf(app.eventTypes) }
  app.decorate('webhookSchemas', named)
  for (const schema of [
    named.WebhookSchema, named.WebhookWithSecretSchema, WebhookSecretSchema, RotateWebhookSecretSchema,
    named.WebhookListSchema, named.NewWebhookSchema, named.WebhookPatchSchema, named.WebhookDeliverySchema,
    WebhookDeliveryAttemptSchema, named.WebhookDeliveryDetailSchema, RecoverWebhookSchema, WebhookRecoverySchema,
    WebhookTestResultSchema, named.WebhookEventTypeListSchema, named.WebhookDeliveryListSchema
  ]) app.addSchema(schema)
  // Only the OpenAPI `webhooks` section refers to these: the bodies receivers get.
  for (const schema of webhookEventSchemas(app.resources)) app.addSchema(schema)
}, { name: 'schemas', dependencies: ['resources'] })

export const ajvOptions: NonNullable<FastifyServerOptions['ajv']> = {
  // An unknown field is a 400 that names it, not silently dropped.
  customOptions: { removeAdditional: false },
  // After ajv-formats, whose own `int64` only checks numbers: ours reads canonical int64 strings.
  onCreate: (ajv) => { ajv.addFormat('int64', int64Format) }
}

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>
type BuildValidator = NonNullable<CompilersFactory['buildValidator']>
type BuildSerializer = NonNullable<CompilersFactory['buildSerializer']>
type RouteValidatorCompiler = FastifySchemaCompiler<unknown>

/** One compile per schema text (the compiler is bound to its shared schemas and options), on first use. */
function compiledOnce<Route extends { schema?: unknown }, Compiled> (
  compile: (route: Route) => Compiled
): (route: Route) => Compiled {
  const compiled = new Map<string, Compiled>()
  return (route) => {
    let key: string | undefined
    try { key = JSON.stringify(route.schema) } catch { return compile(route) }
    if (key === undefined) return compile(route)
    return cached(compiled, key, () => onFirstCall(() => compile(route)))
  }
}

function cached<Value> (pool: Map<string, Value>, key: string, make: () => Value): Value {
  let value = pool.get(key)
  if (value === undefined) {
    value = make()
    pool.set(key, value)
  }
  return value
}

type CompiledFunction = ((...args: unknown[]) => unknown) & { errors?: unknown, schemaEnv?: unknown }

/**
 * Compiles when first called: Fastify compiles every route's schemas at start, and a process meets few.
 * Fastify reads Ajv's `errors` and `schemaEnv` off the function: both are the compiled one's.
 */
export function onFirstCall<Compiled> (compile: () => Compiled): Compiled {
  let compiled: CompiledFunction | undefined
  const real = (): CompiledFunction => (compiled ??= compile() as unknown as CompiledFunction)
  const standIn = (...args: unknown[]): unknown => real()(...args)
  Object.defineProperty(standIn, 'errors', { get: () => real().errors })
  Object.defineProperty(standIn, 'schemaEnv', { get: () => real().schemaEnv })
  return standIn as unknown as Compiled
}

// Shared by every app of the process (tests build hundreds); Ajv is made on first use (adding schemas checks them).
const validatorPool = AjvCompiler()
const validatorsByOptions = new Map<string, RouteValidatorCompiler>()

function sharedValidatorCompiler (...[externalSchemas, options]: Parameters<BuildValidator>): RouteValidatorCompiler {
  return cached(validatorsByOptions, JSON.stringify([externalSchemas, options]), () => {
    let pooled: RouteValidatorCompiler | undefined
    return compiledOnce((route: Parameters<RouteValidatorCompiler>[0]) => {
      pooled ??= validatorPool(externalSchemas, options) as unknown as RouteValidatorCompiler
      return pooled(route)
    })
  })
}

/** Text parts (query, params, headers) are coerced (`'5'` → 5); a JSON body is not: `{"name": 5}` is a 400. */
export const validatorWithoutBodyCoercion = ((...[externalSchemas, options]: Parameters<BuildValidator>) => {
  const coercing = sharedValidatorCompiler(externalSchemas, options)
  const exact = sharedValidatorCompiler(externalSchemas, {
    ...options,
    customOptions: { ...(options as { customOptions?: object } | undefined)?.customOptions, coerceTypes: false }
  } as Parameters<BuildValidator>[1])
  return (route: Parameters<RouteValidatorCompiler>[0]) => (route.httpPart === 'body' ? exact : coercing)(route)
}) as unknown as BuildValidator

const serializerPool = new Map<string, ReturnType<BuildSerializer>>()
const buildFastJsonStringify = SerializerSelector()

/** Shared like the validators: by shared schemas, options and content. */
export const sharedSerializer: BuildSerializer = (externalSchemas, options) =>
  cached(serializerPool, JSON.stringify([externalSchemas, options]), () =>
    // Making the factory compiles nothing (it binds the options): compiledOnce defers each compile.
    compiledOnce(buildFastJsonStringify(externalSchemas, options) as unknown as ReturnType<BuildSerializer>))
