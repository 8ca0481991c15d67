import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'

type Transform = NonNullable<FastifyDynamicSwaggerOptions['transform']>
type JsonObject = Record<string, unknown>

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null

/**
 * Path and query int64s are validated as canonical decimal strings (so they are never rounded), but
 * to a client they are integers: document them as `type: integer, format: int64`.
 */
function documentInt64AsInteger (schema: unknown): unknown {
  if (!isObject(schema) || !isObject(schema.properties)) return schema
  const properties = Object.fromEntries(Object.entries(schema.properties).map(([name, property]) => {
    if (!isObject(property) || property.format !== 'int64' || property.type !== 'string') return [name, property]
    const examples = Array.isArray(property.examples) ? property.examples.map(Number) : undefined
    return [name, { ...property, type: 'integer', ...(examples && { examples }) }]
  }))
  return { ...schema, properties }
}

const transform: Transform = ({ schema, url }) => {
  if (!isObject(schema)) return { schema, url }
  // Copies, never in place: the same schema objects drive validation.
  return {
    schema: { ...schema, params: documentInt64AsInteger(schema.params), querystring: documentInt64AsInteger(schema.querystring) },
    url
  } as ReturnType<Transform>
}

/**
 * Swagger UI's own policy (its `staticCSP: true`) minus `upgrade-insecure-requests`, which would
 * send its scripts to https:// on a plain-HTTP deployment and leave a blank page.
 */
const DOCS_CONTENT_SECURITY_POLICY = "default-src 'self'; base-uri 'self'; font-src 'self' https: data:; " +
  "frame-ancestors 'self'; img-src 'self' data: validator.swagger.io; object-src 'none'; script-src 'self'; " +
  "script-src-attr 'none'; style-src 'self' https:"

/** The OpenAPI 3.1 document (`/openapi.json`) and Swagger UI (`/docs`), both public. */
export default fp(async function docsPlugin (app) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plant Store',
        version: '1.0.0',
        description: 'A store of plants, each addressed by a signed 64-bit id. Every operation needs a bearer token.',
        license: { name: 'MIT', identifier: 'MIT' }
      },
      tags: [
        { name: 'plants', description: 'The plants resource' },
        { name: 'service', description: 'Health and documentation' }
      ],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'A token from API_TOKENS or API_TOKENS_FILE' }
        }
      },
      security: [{ bearerAuth: [] }]
    },
    // Name shared schemas by their $id (`Plant`, `Error`) instead of `def-0`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform
  })

  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { persistAuthorization: true, displayOperationId: true, tryItOutEnabled: true },
    staticCSP: DOCS_CONTENT_SECURITY_POLICY
  })

  app.get('/openapi.json', {
    schema: { hide: true }
  }, async () => app.swagger())
}, { name: 'docs', dependencies: ['schemas'] })
