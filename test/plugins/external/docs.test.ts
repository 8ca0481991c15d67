import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import { buildTestApp } from '../../helpers/app.js'
import { grantingScopes, RESOURCE_OPERATIONS, SCOPE_LIST_TEXT } from '../../helpers/resources.js'

interface Operation {
  operationId?: string
  description?: string
  security?: unknown[]
  'x-scopes'?: string[]
  parameters?: Array<{ name: string, in: string, schema: Record<string, unknown> }>
  responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>
}

test('GET /openapi.json serves a valid OpenAPI 3.1.0 document', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.inject({ method: 'GET', url: '/openapi.json' })
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  const document = res.json()
  const result = await new Validator().validate(document)
  assert.deepEqual(result.errors, undefined)
  assert.equal(result.valid, true)
  assert.equal(document.openapi, '3.1.0')
  assert.equal(document.info.version, '1.0.0')
  assert.equal(document.info.license.name, 'MIT')
})

test('the document names Plant and Error, and makes bearerAuth the default security', async (t) => {
  const app = await buildTestApp(t)
  const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()
  assert.deepEqual(Object.keys(document.components.schemas).filter((name) => name.startsWith('def-')), [])
  assert.deepEqual(document.components.schemas.Error.required, ['error', 'message'])
  assert.deepEqual(document.components.schemas.Error.properties.error, {
    type: 'integer', format: 'int32', description: 'The HTTP status code', examples: [404]
  })
  assert.equal(document.components.schemas.Plant.properties.id.type, 'integer')
  assert.equal(document.components.schemas.Plant.properties.id.format, 'int64')
  assert.deepEqual(document.components.securitySchemes, {
    bearerAuth: {
      type: 'http',
      scheme: 'bearer',
      description: 'A token from API_TOKENS (every scope) or API_TOKENS_FILE (its scopes). Each operation lists the ' +
        'scopes that grant it ' +
        `(a write scope includes its read scope): ${SCOPE_LIST_TEXT}. A token with none of them is answered 403.`
    }
  })
  assert.deepEqual(document.security, [{ bearerAuth: [] }])
  assert.deepEqual(document.paths['/health'].get.security, [])
})

test('DELETE /plants/{id} is documented with an int64 integer path id and every status it answers', async (t) => {
  const app = await buildTestApp(t)
  const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()
  const operation: Operation = document.paths['/plants/{id}'].delete
  assert.equal(operation.operationId, 'deletePlant')
  assert.ok((operation.description ?? '').length > 0)
  // Linters accept scopes in a requirement only under an OAuth2 flow listing them: the scope is in x-scopes.
  assert.deepEqual(operation.security, [{ bearerAuth: [] }])
  assert.deepEqual(operation['x-scopes'], ['plants:write'], 'the scope the route declares')
  const id = operation.parameters?.find((parameter) => parameter.name === 'id')
  assert.equal(id?.in, 'path')
  assert.equal(id?.schema.type, 'integer')
  assert.equal(id?.schema.format, 'int64')
  assert.deepEqual(operation.responses['204']?.content, undefined)
  for (const status of ['400', '401', '403', '404', '4XX', '5XX']) {
    assert.equal(operation.responses[status]?.content?.['application/json']?.schema.$ref, '#/components/schemas/Error',
      status)
  }
})

test('GET /docs serves Swagger UI, wired to the document', async (t) => {
  const app = await buildTestApp(t)
  const page = await app.inject({ method: 'GET', url: '/docs' })
  assert.equal(page.statusCode, 200)
  assert.equal(page.headers['content-type'], 'text/html; charset=utf-8')
  assert.match(page.body, /swagger-ui/)
  const init = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' })
  assert.equal(init.statusCode, 200)
  assert.match(init.body, /persistAuthorization/)
  assert.match(init.body, /"showExtensions": ?true/, 'each operation shows its x-scopes')
  const json = await app.inject({ method: 'GET', url: '/docs/json' })
  assert.deepEqual(json.json().components.securitySchemes.bearerAuth.scheme, 'bearer')
})

test('each operation documents the scopes that grant it (a read: the resource\'s read or write scope); with ' +
  'OIDC_ISSUER an openIdConnect scheme offers the same', async (t) => {
  const scopesOf = (document: { paths: Record<string, Record<string, Operation>> }) => Object.fromEntries(Object.values(
    document.paths)
    .flatMap((item) => Object.values(item)).map(
      (operation) => [operation.operationId, { security: operation.security, scopes: operation['x-scopes'] }]))
  const plain = (await (await buildTestApp(t)).inject({ url: '/openapi.json' })).json()
  const expected = (schemes: string[]) => {
    const requirement = (...scopes: string[]) => ({
      security: schemes.map((scheme) => ({ [scheme]: [] })),
      scopes
    })
    return {
      ...Object.fromEntries(RESOURCE_OPERATIONS.map(({ operationId, resource, access }) =>
        [operationId, requirement(...grantingScopes(resource, access))])),
      listWebhooks: requirement('webhooks'),
      headWebhooks: requirement('webhooks'),
      getWebhook: requirement('webhooks'),
      headWebhook: requirement('webhooks'),
      createWebhook: requirement('webhooks'),
      updateWebhook: requirement('webhooks'),
      deleteWebhook: requirement('webhooks'),
      rotateWebhookSecret: requirement('webhooks'),
      listWebhookDeliveries: requirement('webhooks'),
      headWebhookDeliveries: requirement('webhooks'),
      retryWebhookDelivery: requirement('webhooks'),
      getWebhookSecret: requirement('webhooks'),
      headWebhookSecret: requirement('webhooks'),
      getWebhookDelivery: requirement('webhooks'),
      headWebhookDelivery: requirement('webhooks'),
      recoverWebhook: requirement('webhooks'),
      testWebhook: requirement('webhooks'),
      listWebhookEventTypes: requirement('webhooks'),
      headWebhookEventTypes: requirement('webhooks'),
      getHealth: { security: [], scopes: undefined },
      headHealth: { security: [], scopes: undefined },
      getLiveness: { security: [], scopes: undefined },
      headLiveness: { security: [], scopes: undefined },
      getReadiness: { security: [], scopes: undefined },
      headReadiness: { security: [], scopes: undefined }
    }
  }
  assert.deepEqual(scopesOf(plain), expected(['bearerAuth']))

  const oidc = (await (await buildTestApp(t, {
    OIDC_ISSUER: 'https://login.example.com/realms/plants',
    OIDC_AUDIENCE: 'https://plants.example.com'
  }))
    .inject({ url: '/openapi.json' })).json()
  assert.deepEqual(scopesOf(oidc), expected(['bearerAuth', 'openIdConnect']))
  assert.deepEqual(oidc.security, [{ bearerAuth: [] }, { openIdConnect: [] }])
  assert.deepEqual(oidc.components.securitySchemes.openIdConnect, {
    type: 'openIdConnect',
    openIdConnectUrl: 'https://login.example.com/realms/plants/.well-known/openid-configuration',
    description: 'JWT access tokens of https://login.example.com/realms/plants for the audience ' +
      'https://plants.example.com, with the scopes in ' +
      `\`scope\` or \`scp\`: ${SCOPE_LIST_TEXT}.`
  })
  assert.match(oidc.components.securitySchemes.bearerAuth.description,
    /, or a JWT access token of the OpenID provider\./)
})
