import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { documentSecurityHeaders } from './helmet.js'
import type { SandboxConfig } from '../../src/sandbox/settings.js'
import { duration } from '../../src/lib/human.js'
import type { Scope, ScopeCatalog } from '../../src/auth/scopes.js'
import { rateLimitHeaders, requestIdHeader } from '../../src/schemas/headers.js'
import { webhookEventsDocument } from '../../src/schemas/webhook-events.js'
import { eventSubjectsOf } from '../../src/webhooks/events.js'

type Transform = NonNullable<FastifyDynamicSwaggerOptions['transform']>
type JsonObject = Record<string, unknown>

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null

/** A copy of `object` with each member that is an object replaced by `change(member, name)`. */
function mapMembers (object: unknown, change: (member: JsonObject, name: string) => unknown): unknown {
  if (!isObject(object)) return object
  return Object.fromEntries(Object.entries(object).map(([name, member]) =>
    [name, isObject(member) ? change(member, name) : member]))
}

const mapProperties = (schema: unknown, change: (property: JsonObject, name: string) => unknown): unknown =>
  isObject(schema) && isObject(schema.properties)
    ? { ...schema, properties: mapMembers(schema.properties, change) }
    : schema

/** Validated as decimal strings (never rounded), but to a client they are `integer, format: int64`. */
const documentInt64AsInteger = (schema: unknown): unknown => mapProperties(schema, (property) => {
  if (property.format !== 'int64' || property.type !== 'string') return property
  const examples = Array.isArray(property.examples) ? property.examples.map(Number) : undefined
  return { ...property, type: 'integer', ...(examples && { examples }) }
})

/** Swagger UI's "Try it out" would send an optional example unasked (a bogus If-Match, a reused key). */
function withoutOptionalExamples (schema: unknown): unknown {
  const required = isObject(schema) && Array.isArray(schema.required) ? schema.required : []
  return mapProperties(schema, (property, name) => {
    if (required.includes(name)) return property
    const { examples: _examples, ...documented } = property
    return documented
  })
}

/** @fastify/swagger drops the keywords next to a `$ref` response schema, so the example goes on the media type. */
const documentRefExamples = (responses: unknown): unknown => mapMembers(responses, (response) => {
  if (typeof response.$ref !== 'string' || !Array.isArray(response.examples)) return response
  const { examples, description, headers, ...schema } = response
  return {
    description,
    ...(headers !== undefined && { headers }),
    content: { 'application/json': { schema, example: examples[0] } }
  }
})

const withRateLimitHeaders = (responses: unknown): unknown => mapMembers(responses, (response) =>
  ({ ...response, headers: { ...(isObject(response.headers) ? response.headers : {}), ...rateLimitHeaders } }))

/** Fastify answers HEAD on every GET route (`exposeHeadRoutes`); @fastify/swagger names it `<operationId>-head`. */
function documentHead (schema: JsonObject): JsonObject {
  const get = String(schema.operationId).replace(/-head$/, '')
  const responses = isObject(schema.response) ? schema.response : {}
  return {
    ...schema,
    operationId: get.replace(/^(get|list)/, 'head'),
    summary: `${String(schema.summary)}: headers only`,
    description: `What \`${get}\` answers, status and headers, without the body (HTTP HEAD).`,
    response: Object.fromEntries(Object.entries(responses).map(([status, response]) => {
      const { description, headers } = isObject(response) ? response : {}
      return [status, { type: 'null', description, ...(headers !== undefined && { headers }) }]
    }))
  }
}

/**
 * A route's `config.scope` (what the auth hook checks) as the scopes that grant it, any one of them. Linters
 * (Spectral's oas3-operation-security-defined) accept scopes in a requirement only with an OAuth2 flow, which
 * neither scheme has: each requirement is empty, and `x-scopes` names the granting scopes.
 */
function securityOf (scope: Scope | undefined, schemes: readonly string[], { grantedBy }: ScopeCatalog): JsonObject {
  if (scope === undefined) return {}
  const granting = grantedBy[scope]
  if (granting === undefined) throw new Error(`a route declares the scope ${scope}, which no served resource has`)
  return { security: schemes.map((scheme) => ({ [scheme]: [] })), 'x-scopes': [...granting] }
}

const transformWith = (schemes: readonly string[], scopes: ScopeCatalog): Transform => ({ schema, url, route }) => {
  if (!isObject(schema)) return { schema, url }
  // Copies, never in place: the same schema objects drive validation.
  const documented = {
    ...schema,
    ...securityOf(route.config?.scope, schemes, scopes),
    params: documentInt64AsInteger(schema.params),
    querystring: withoutOptionalExamples(documentInt64AsInteger(schema.querystring)),
    headers: withoutOptionalExamples(schema.headers),
    response: documentRefExamples(
      route.config?.rateLimit === false ? schema.response : withRateLimitHeaders(schema.response)
    )
  }
  return { schema: route.method === 'HEAD' ? documentHead(documented) : documented, url } as ReturnType<Transform>
}

const COMPONENT_SCHEMA = '#/components/schemas/'

const values = (value: unknown): unknown[] => (isObject(value) ? Object.values(value) : [])

const operationsOf = (document: JsonObject): JsonObject[] => values(document.paths).flatMap(values).filter(isObject)
const responsesOf = (document: JsonObject): JsonObject[] =>
  operationsOf(document).flatMap((operation) => values(operation.responses)).filter(isObject)

/** @fastify/swagger puts `required: true` into the header's schema; tools read it on the header object. */
function hoistRequiredHeaders (document: JsonObject): void {
  for (const header of responsesOf(document).flatMap((response) => values(response.headers))) {
    if (!isObject(header) || !isObject(header.schema) || header.schema.required !== true) continue
    const { required: _required, ...schema } = header.schema
    header.schema = schema
    header.required = true
  }
}

const REQUEST_ID_HEADER = 'X-Request-Id'

/** Every answer carries X-Request-Id: one header component, referenced by every response. */
function documentRequestId (document: JsonObject): void {
  const { type, pattern, description } = requestIdHeader[REQUEST_ID_HEADER]
  document.components = {
    ...(isObject(document.components) ? document.components : {}),
    headers: { [REQUEST_ID_HEADER]: { description, required: true, schema: { type, pattern } } }
  }
  for (const response of responsesOf(document)) {
    response.headers = {
      ...(isObject(response.headers) ? response.headers : {}),
      [REQUEST_ID_HEADER]: { $ref: `#/components/headers/${REQUEST_ID_HEADER}` }
    }
  }
}

/** A `$ref` body shows its schema's first example, so examples are written once, on the TypeBox schemas. */
const finishDocument: NonNullable<FastifyDynamicSwaggerOptions['transformObject']> = (documentObject) => {
  if (!('openapiObject' in documentObject)) return documentObject.swaggerObject
  const document = documentObject.openapiObject
  hoistRequiredHeaders(document as JsonObject)
  documentRequestId(document as JsonObject)
  const schemas = document.components?.schemas ?? {}
  const mediaTypes = operationsOf(document as JsonObject)
    .flatMap((operation) => [operation.requestBody, ...values(operation.responses)])
    .flatMap((body) => (isObject(body) ? values(body.content) : []))
  for (const media of mediaTypes) {
    if (!isObject(media) || 'example' in media || 'examples' in media || !isObject(media.schema)) continue
    const target = media.schema.$ref
    if (typeof target !== 'string' || !target.startsWith(COMPONENT_SCHEMA)) continue
    const component: unknown = schemas[target.slice(COMPONENT_SCHEMA.length)]
    if (isObject(component) && Array.isArray(component.examples) && component.examples.length > 0) {
      media.example = component.examples[0]
    }
  }
  return document
}

/** Swagger UI's own policy minus `upgrade-insecure-requests`, which leaves a blank page on plain HTTP. */
const DOCS_CONTENT_SECURITY_POLICY = "default-src 'self'; base-uri 'self'; font-src 'self' https: data:; " +
  "frame-ancestors 'self'; img-src 'self' data: validator.swagger.io; object-src 'none'; script-src 'self'; " +
  "script-src-attr 'none'; style-src 'self' https:"

/** What a visitor of a sandbox's Swagger UI reads first; the document is unchanged without SANDBOX. */
function sandboxNote ({ maxPlants, maxSubscriptions, ttlMs }: SandboxConfig): string {
  return 'This service runs as a public sandbox: authorize with any token of 16 to 256 URL-safe characters (A-Z a-z ' +
    '0-9 . _ ~ -), make one up. Each token has plants of its own, starting with a few examples (ids from 1), ' +
    `at most ${maxPlants} plants and ${maxSubscriptions} webhook subscriptions (to public addresses only); a token ` +
    `unused for ${duration(ttlMs)} is deleted with its data. Never put anything private here. `
}

/** Bearer tokens as this instance accepts them, and the OpenID provider's when there is one. */
function securitySchemesOf (
  { oidc, sandbox }: FastifyInstance['config'], scopeCatalog: FastifyInstance['scopeCatalog']
) {
  const scopeList = Object.entries(scopeCatalog.descriptions)
    .map(([scope, description]) => `\`${scope}\` (${description.toLowerCase()})`).join(', ')
  return {
    bearerAuth: {
      type: 'http' as const,
      scheme: 'bearer',
      description:
        sandbox !== undefined
          ? 'Any token of 16 to 256 URL-safe characters: each token is a sandbox tenant of its own, with every ' +
            `scope: ${scopeList}.`
          : 'A token from API_TOKENS (every scope) or API_TOKENS_FILE (its ' +
            `scopes)${oidc === undefined ? '' : ', or a JWT access token of the OpenID provider'}. ` +
            `Each operation lists the scopes that grant it (a write scope includes its read scope): ${scopeList}. ` +
            'A token with none of them is answered 403.'
    },
    // Swagger UI's Authorize then obtains a token from the provider (client credentials).
    ...(oidc !== undefined && {
      openIdConnect: {
        type: 'openIdConnect' as const,
        openIdConnectUrl: `${oidc.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`,
        description: `JWT access tokens of ${oidc.issuer} for the audience ${oidc.audience}, with the scopes in ` +
          `\`scope\` or \`scp\`: ${scopeList}.`
      }
    })
  }
}

export default fp(async function docsPlugin (app) {
  const { config: { oidc, sandbox }, resources, scopeCatalog, eventTypes } = app
  const securitySchemes = securitySchemesOf(app.config, scopeCatalog)
  const schemes = Object.keys(securitySchemes)
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plant Store',
        version: '1.0.0',
        description: (sandbox === undefined ? '' : sandboxNote(sandbox)) +
          'A store of plants, each addressed by a signed 64-bit id. Every operation needs a bearer token. Request ' +
          'bodies are I-JSON (RFC 7493): UTF-8, each member name once per object; query strings are percent-encoded ' +
          'UTF-8.',
        // No public address of its own to give: who runs it is who answers for it.
        contact: { name: 'The operators of this service' },
        license: { name: 'MIT', identifier: 'MIT' }
      },
      tags: [
        ...resources.map((resource) => ({ name: resource.collection, description: resource.texts.tag })),
        {
          name: 'webhooks',
          description: `Webhook subscriptions: the service POSTs every ${eventSubjectsOf(resources)} change ` +
            `(${eventTypes.map((type) => `\`${type}\``).join(', ')}) ` +
            'to the URLs a token subscribed, signed as Standard Webhooks specifies. Each token sees and manages its ' +
            'own subscriptions only. The events themselves are described under `webhooks`.'
        },
        { name: 'service', description: 'Health and documentation' }
      ],
      components: { securitySchemes },
      security: schemes.map((scheme) => ({ [scheme]: [] })),
      // What receivers get: one POST per event type (OpenAPI 3.1 `webhooks`).
      webhooks: webhookEventsDocument(resources),
      // Relative by default; PUBLIC_URL makes it absolute for tools that read the document from a file.
      servers: [{
        url: app.config.publicUrl ?? '/',
        description: sandbox === undefined
          ? 'This service'
          : 'This service, a public sandbox (any token; data deleted when unused)'
      }]
    },
    stripBasePath: false,
    exposeHeadRoutes: true,
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`)
    },
    transform: transformWith(schemes, scopeCatalog),
    transformObject: finishDocument
  })

  // Swagger UI in its own context, so it gets an HTML document's security headers and the API keeps its shorter set.
  await app.register(async function swaggerUiPages (pages) {
    pages.addHook('onRequest', documentSecurityHeaders)
    await pages.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: {
        // localStorage is readable by any script on this origin and left behind on shared machines: opt-in only.
        persistAuthorization: app.config.docs.persistAuthorization,
        displayOperationId: true,
        tryItOutEnabled: true,
        // Each operation's `x-scopes`, the scope it needs, shows under it.
        showExtensions: true
      },
      // With OIDC, Authorize fetches the provider's discovery document and token endpoint from the page.
      staticCSP:
        oidc === undefined
          ? DOCS_CONTENT_SECURITY_POLICY
          : `${DOCS_CONTENT_SECURITY_POLICY}; connect-src 'self' ${new URL(oidc.issuer).origin}`
    })
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}, { name: 'docs', dependencies: ['config', 'resources', 'schemas'] })
