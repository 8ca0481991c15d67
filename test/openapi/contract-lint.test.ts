import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkOpenApiDocument } from '../../scripts/openapi-lint.js'
import { servedOpenApiDocument } from '../../scripts/openapi-document.js'
import { buildTestApp } from '../helpers/app.js'

type JsonObject = Record<string, unknown>
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null &&
  !Array.isArray(value)
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** Every operation of the document, with its path and method. */
function operations (document: JsonObject): Array<{ where: string, path: string, operation: JsonObject }> {
  assert.ok(isObject(document.paths))
  return Object.entries(document.paths).flatMap(([path, item]) => {
    assert.ok(isObject(item))
    return METHODS.filter((method) => isObject(item[method]))
      .map((method) => ({ where: `${method.toUpperCase()} ${path}`, path, operation: item[method] as JsonObject }))
  })
}

test('the served document is valid OpenAPI 3.1 and passes the committed Redocly rules with zero problems', async () => {
  assert.deepEqual(await checkOpenApiDocument(await servedOpenApiDocument()), [])
})

test('with OIDC_ISSUER (an openIdConnect scheme too) the document passes the same ' +
  'lint with zero problems', async (t) => {
  const app = await buildTestApp(t, {
    OIDC_ISSUER: 'https://login.example.com/realms/plants',
    OIDC_AUDIENCE: 'https://plants.example.com'
  })
  assert.deepEqual(await checkOpenApiDocument((await app.inject({ url: '/openapi.json' })).json()), [])
})

test('the lint catches a missing summary, a missing example and an unknown tag', async () => {
  const document = await servedOpenApiDocument()
  const broken = structuredClone(document) as { paths: Record<string, Record<string, JsonObject>> }
  const deletePlant = broken.paths['/plants/{id}']?.delete
  assert.ok(deletePlant !== undefined)
  delete deletePlant.summary
  deletePlant.tags = ['nowhere']
  const responses = deletePlant.responses as Record<string, { content: Record<string, JsonObject> }>
  const notFound = responses['404']?.content['application/json']
  assert.ok(notFound !== undefined)
  delete notFound.example
  const rules = (await checkOpenApiDocument(broken)).map(
    (problem) => `${problem.source} ${problem.rule} ${problem.where}`).sort()
  assert.deepEqual(rules, [
    'redocly operation-summary #/paths/~1plants~1{id}/delete/summary',
    'redocly operation-tag-defined #/paths/~1plants~1{id}/delete/tags/0',
    'redocly rule/media-type-example #/paths/~1plants~1{id}/delete/responses/404/content/application~1json',
    'spectral operation-tag-defined #/paths/~1plants~1{id}/delete/tags/0'
  ])
})

test('every operation has an operationId, a summary, a description, tags and examples, and documents every ' +
  'status it can answer', async () => {
  const document = await servedOpenApiDocument()
  const list = operations(document)
  assert.ok(list.length >= 7, 'health + the six plants operations')
  for (const { where, path, operation } of list) {
    for (const field of ['operationId', 'summary', 'description'] as const) {
      assert.equal(typeof operation[field], 'string', `${where}: ${field}`)
      assert.notEqual(operation[field], '', `${where}: ${field}`)
    }
    assert.ok(Array.isArray(operation.tags) && operation.tags.length > 0, `${where}: tags`)

    const responses = operation.responses
    assert.ok(isObject(responses), `${where}: responses`)
    const bodies = [operation.requestBody, ...Object.values(responses)]
      .flatMap((body) => (isObject(body) && isObject(body.content) ? Object.values(body.content) : []))
    for (const media of bodies) {
      assert.ok(isObject(media) && ('example' in media || 'examples' in media), `${where}: every body has an example`)
    }

    // What any operation can answer, from the errors plugin and the framework.
    const expected = ['4XX', '5XX']
    const secured = !Array.isArray(operation.security) || operation.security.length > 0
    if (secured) expected.push('401', '403')
    if (Array.isArray(operation.parameters) || operation.requestBody !== undefined) expected.push('400')
    if (path.includes('{id}')) expected.push('404')
    if (operation.requestBody !== undefined) expected.push('413', '415')
    for (const status of expected) {
      assert.ok(status in responses, `${where} documents ${status}`)
      const content: unknown = (responses[status] as JsonObject).content
      // A HEAD answer never has a body: the same statuses, without content.
      if (where.startsWith('HEAD ')) {
        assert.equal(content, undefined, `${where} ${status}: no body`)
        continue
      }
      assert.ok(isObject(content) && isObject(content['application/json']), `${where} ${status}: an Error body`)
      assert.deepEqual((content['application/json'] as JsonObject).schema, { $ref: '#/components/schemas/Error' },
        `${where} ${status}`)
    }
    assert.ok(Object.keys(responses).some((status) => status.startsWith('2')), `${where}: a 2xx`)
  }
})

test('no optional parameter carries an example (Swagger UI would send it unasked) and a ' +
  'defaulted limit is optional', async () => {
  const document = await servedOpenApiDocument()
  for (const { where, operation } of operations(document)) {
    for (const parameter of Array.isArray(operation.parameters) ? operation.parameters : []) {
      assert.ok(isObject(parameter) && isObject(parameter.schema))
      if (parameter.required === true) continue
      assert.ok(!('example' in parameter) && !('examples' in parameter) && !('examples' in parameter.schema),
        `${where} ${String(parameter.name)}`)
    }
  }
  const list = operations(document).find(({ where }) => where === 'GET /plants')
  const limit = (list?.operation.parameters as JsonObject[]).find((parameter) => parameter.name === 'limit')
  assert.deepEqual({ required: limit?.required, default: (limit?.schema as JsonObject).default },
    { required: false, default: 20 })
})

test('Spectral (spectral:oas) is part of the lint: a scope under the http bearer scheme and a ' +
  'missing contact are caught', async () => {
  const broken = structuredClone(await servedOpenApiDocument()) as {
    info: JsonObject,
    paths: Record<string, Record<string, JsonObject>>
  }
  delete broken.info.contact
  const deletePlant = broken.paths['/plants/{id}']?.delete
  assert.ok(deletePlant !== undefined)
  deletePlant.security = [{ bearerAuth: ['plants:write'] }]
  const found = (await checkOpenApiDocument(broken)).map(
    ({ source, rule, where, message }) => `${source} ${rule} ${where} ${message}`).sort()
  assert.deepEqual(found, [
    'spectral info-contact #/info warning: Info object must have "contact" object.',
    'spectral oas3-operation-security-defined #/paths/~1plants~1{id}/delete/security/0/bearerAuth/0 warning: ' +
      '"plants:write" must be listed among scopes.'
  ])
})
