import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import { buildTestApp } from '../../helpers/app.js'

interface Operation {
  operationId?: string
  description?: string
  security?: unknown[]
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
  assert.deepEqual(document.components.securitySchemes.bearerAuth, {
    type: 'http', scheme: 'bearer', description: 'A token from API_TOKENS or API_TOKENS_FILE'
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
  assert.equal(operation.security, undefined, 'inherits the default bearerAuth requirement')
  const id = operation.parameters?.find((parameter) => parameter.name === 'id')
  assert.equal(id?.in, 'path')
  assert.equal(id?.schema.type, 'integer')
  assert.equal(id?.schema.format, 'int64')
  assert.deepEqual(operation.responses['204']?.content, undefined)
  for (const status of ['400', '401', '404', '4XX', '5XX']) {
    assert.equal(operation.responses[status]?.content?.['application/json']?.schema.$ref, '#/components/schemas/Error', status)
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
  const json = await app.inject({ method: 'GET', url: '/docs/json' })
  assert.deepEqual(json.json().components.securitySchemes.bearerAuth.scheme, 'bearer')
})
