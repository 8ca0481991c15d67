import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH, buildTestApp } from '../helpers/app.js'
import { createPlant } from '../helpers/plants.js'
import { RESOURCE_OPERATIONS } from '../helpers/resources.js'
import { WEBHOOK_OPERATIONS } from '../helpers/scoped-tokens.js'

/**
 * A document third-party tools can trust: every route served is documented (HEAD too), headers
 * always sent are required, the servers entry says where the API is, and a browser may read every
 * header the document declares.
 */

interface Header { required?: boolean, schema: Record<string, unknown>, description?: string }
interface Response { description: string, headers?: Record<string, Header>, content?: Record<string, unknown> }
interface Operation {
  operationId: string,
  summary: string,
  description: string,
  parameters?: unknown[],
  responses: Record<string, Response>
}
interface Document { servers?: Array<{ url: string }>, paths: Record<string, Record<string, Operation>> }

async function documentOf (app: FastifyInstance): Promise<Document> {
  const res = await app.inject({ url: '/openapi.json' })
  assert.equal(res.statusCode, 200)
  return res.json<Document>()
}

const operation = (document: Document, path: string, method: string): Operation => {
  const found = document.paths[path]?.[method]
  assert.ok(found, `${method.toUpperCase()} ${path} is documented`)
  return found
}

const requiredHeaders = (response: Response | undefined): string[] =>
  Object.entries(response?.headers ?? {}).filter(([, header]) => header.required === true).map(([name]) => name).sort()

test('each resource\'s HEADs and HEAD /health are documented (headPlant, headPlants, headHealth): the ' +
  'GET\'s headers, no body', async (t) => {
  const app = await buildTestApp(t)
  const document = await documentOf(app)
  const idOf = (path: string, method: string): string =>
    RESOURCE_OPERATIONS.find((expected) => expected.path === path && expected.method === method)?.operationId ??
      `no ${method} ${path}`
  const pairs: Array<[path: string, head: string, get: string]> = [
    ...RESOURCE_OPERATIONS.filter(
      ({ method }) => method === 'head').map(({ path, operationId }): [string, string, string] =>
      [path, operationId, idOf(path, 'get')]),
    ['/health', 'headHealth', 'getHealth']
  ]
  for (const [path, head, get] of pairs) {
    const headOperation = operation(document, path, 'head')
    const getOperation = operation(document, path, 'get')
    assert.equal(headOperation.operationId, head)
    assert.equal(getOperation.operationId, get)
    assert.equal(headOperation.description,
      `What \`${get}\` answers, status and headers, without the body (HTTP HEAD).`)
    assert.deepEqual(headOperation.parameters, getOperation.parameters)
    assert.deepEqual(Object.keys(headOperation.responses), Object.keys(getOperation.responses))
    for (const [status, response] of Object.entries(headOperation.responses)) {
      assert.equal(response.content, undefined, `${head} ${status} has no body`)
      assert.deepEqual(response.headers, getOperation.responses[status]?.headers,
        `${head} ${status}: the GET's headers`)
    }
  }
  // And they are what the server answers.
  const { etag } = await createPlant(app, { name: 'Fern' })
  const head = await app.inject({ method: 'HEAD', url: '/plants/1', headers: AUTH })
  assert.equal(head.statusCode, 200)
  assert.equal(head.headers.etag, etag)
  assert.equal(head.body, '')
  // Nothing served goes undocumented: the document's operations are exactly the routes, hidden ones aside.
  const documented = Object.entries(document.paths).flatMap(
    ([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`)).sort()
  assert.deepEqual(documented, [
    ...RESOURCE_OPERATIONS.map(({ method, path }) => `${method.toUpperCase()} ${path}`),
    'GET /health', 'GET /health/live', 'GET /health/ready', 'HEAD /health', 'HEAD /health/live', 'HEAD /health/ready',
    'DELETE /webhooks/{id}', 'GET /webhooks', 'GET /webhooks/{id}', 'GET /webhooks/{id}/deliveries', 'HEAD /webhooks',
    'HEAD /webhooks/{id}',
    'HEAD /webhooks/{id}/deliveries', 'PATCH /webhooks/{id}', 'POST /webhooks',
    'POST /webhooks/{id}/deliveries/{deliveryId}/retry',
    'POST /webhooks/{id}/rotate-secret', 'GET /webhooks/{id}/secret', 'HEAD /webhooks/{id}/secret',
    'GET /webhooks/{id}/deliveries/{deliveryId}', 'HEAD /webhooks/{id}/deliveries/{deliveryId}',
    'POST /webhooks/{id}/recover',
    'POST /webhooks/{id}/test', 'GET /webhooks/event-types', 'HEAD /webhooks/event-types'
  ].sort())
})

test('headers that are always sent are required: ETag on plant answers and 304, Location on 201, ' +
  'WWW-Authenticate on every 401', async (t) => {
  const app = await buildTestApp(t)
  const document = await documentOf(app)
  assert.deepEqual(requiredHeaders(operation(document, '/plants', 'post').responses['201']), ['ETag', 'Location'])
  assert.deepEqual(requiredHeaders(operation(document, '/webhooks', 'post').responses['201']), ['Location'])
  for (const [path, method, status] of [['/plants/{id}', 'get', '200'], ['/plants/{id}', 'get', '304'],
    ['/plants/{id}', 'head', '200'],
    ['/plants/{id}', 'head', '304'], ['/plants/{id}', 'put', '200'], ['/plants/{id}', 'patch', '200']] as const) {
    assert.deepEqual(requiredHeaders(operation(document, path, method).responses[status]), ['ETag'],
      `${method} ${path} ${status}`)
  }
  let unauthorized = 0
  for (const item of Object.values(document.paths)) {
    for (const { operationId, responses } of Object.values(item)) {
      const response = responses['401']
      if (response === undefined) continue
      unauthorized++
      assert.deepEqual(requiredHeaders(response), ['WWW-Authenticate'], operationId)
      assert.deepEqual(response.headers?.['WWW-Authenticate'], {
        required: true,
        schema: {
          type: 'string',
          pattern: '^Bearer( error="(invalid_token|insufficient_scope)"(, scope="[a-z:]+")?)?$'
        },
        description: 'The authentication scheme to use, a bearer token; with `error="invalid_token"` when a ' +
          'JWT failed a check, ' +
          'and on a 403 `error="insufficient_scope", scope="<the scope needed>"` (RFC 6750 §3)'
      })
      assert.deepEqual(responses['403']?.headers?.['WWW-Authenticate'], response.headers?.['WWW-Authenticate'],
        operationId)
    }
  }
  assert.equal(unauthorized, RESOURCE_OPERATIONS.length + WEBHOOK_OPERATIONS,
    'every resource and webhooks operation, HEAD included')
  // Optional ones stay optional: they are not on every answer.
  assert.deepEqual(requiredHeaders(operation(document, '/plants', 'get').responses['200']), [])
  assert.equal(operation(document, '/plants', 'get').responses['200']?.headers?.Link?.required, undefined)
  // What the server sends on a 401, every time.
  const res = await app.inject({ url: '/plants' })
  assert.equal(res.statusCode, 401)
  assert.equal(res.headers['www-authenticate'], 'Bearer')
})

test('servers: `/` (relative to the document) by default; PUBLIC_URL makes it absolute, without a trailing slash, ' +
  'and paths stay whole', async (t) => {
  assert.deepEqual((await documentOf(await buildTestApp(t))).servers, [{ url: '/', description: 'This service' }])
  const behindProxy = await documentOf(await buildTestApp(t, { PUBLIC_URL: 'https://api.example.com/plants/' }))
  assert.deepEqual(behindProxy.servers, [{ url: 'https://api.example.com/plants', description: 'This service' }])
  // The server URL's path is not stripped from the routes' (it would turn /plants/{id} into /{id}).
  assert.deepEqual(Object.keys(behindProxy.paths).sort(), [
    ...new Set(RESOURCE_OPERATIONS.map(({ path }) => path)), '/health', '/health/live', '/health/ready', '/webhooks',
    '/webhooks/{id}', '/webhooks/{id}/deliveries', '/webhooks/{id}/deliveries/{deliveryId}/retry',
    '/webhooks/{id}/rotate-secret',
    '/webhooks/{id}/secret', '/webhooks/{id}/deliveries/{deliveryId}', '/webhooks/{id}/recover', '/webhooks/{id}/test',
    '/webhooks/event-types'].sort())
})

test('with CORS_ORIGINS set, a browser may read every response header the document ' +
  'declares, and only those', async (t) => {
  const app = await buildTestApp(t, { CORS_ORIGINS: 'https://app.example' })
  const document = await documentOf(app)
  const declared = new Set<string>()
  for (const item of Object.values(document.paths)) {
    for (const { responses } of Object.values(item)) {
      for (const response of Object.values(responses)) {
        for (const name of Object.keys(response.headers ?? {})) declared.add(name.toLowerCase())
      }
    }
  }
  for (const name of ['etag', 'location', 'link', 'idempotent-replayed', 'retry-after', 'ratelimit-limit',
    'www-authenticate']) {
    assert.ok(declared.has(name), `the document declares ${name}`)
  }
  const answers = [
    await app.inject({ url: '/plants', headers: { ...AUTH, origin: 'https://app.example' } }),
    await app.inject({ url: '/health', headers: { origin: 'https://app.example' } }),
    await app.inject({ method: 'DELETE', url: '/plants/1', headers: { ...AUTH, origin: 'https://app.example' } })
  ]
  for (const res of answers) {
    const exposed = String(res.headers['access-control-expose-headers']).split(',').map(
      (name) => name.trim().toLowerCase())
    assert.deepEqual([...exposed].sort(), [...declared].sort())
  }
})
