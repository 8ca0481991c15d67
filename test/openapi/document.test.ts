import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { Webhook } from 'standardwebhooks'
import { AUTH, buildTestApp, TOKEN } from '../helpers/app.js'
import { EVENT_TYPES, RESOURCE_OPERATIONS } from '../helpers/resources.js'
import { scopedToken, tokensFile } from '../helpers/scoped-tokens.js'
import { OTHER_TOKEN, PUBLIC_RECEIVER } from '../helpers/webhooks.js'
import { SECRET_EXAMPLE } from '../../src/schemas/webhook.js'
import { webhookBusy } from '../../src/lib/errors.js'
import type { Repository, ResourceDefinition, ResourceTypes } from '../../src/resources/definition.js'
import { RESOURCES } from '../../src/resources/index.js'

/**
 * Walks the served OpenAPI document: every operation declares every status it can answer (and
 * answers every status it declares), and every response received here validates against it.
 */

type Json = Record<string, unknown>
interface Operation {
  operationId: string
  summary?: string
  description?: string
  tags?: string[]
  security?: unknown[]
  parameters?: Array<{ name: string, in: string }>
  requestBody?: { content: Record<string, { schema: Json }> }
  responses: Record<string, {
    description: string,
    headers?: Record<string, Header | { $ref: string }>,
    content?: Record<string, { schema: Json }>
  }>
}
interface Header { schema: Json, required?: boolean }
interface OpenApi {
  paths: Record<string, Record<string, Operation>>,
  components: { schemas: Record<string, Json>, headers: Record<string, Header> }
}

/** The schema of each media type (each also carries an example, checked in contract-lint.test.ts). */
const schemasOf = (content: Record<string, { schema: Json }> | undefined): Record<string, Json> | undefined =>
  content === undefined
    ? undefined
    : Object.fromEntries(
      Object.entries(content).map(([type, media]) => [type, media.schema]))

/** Headers this API defines; each must be documented on the response that carries it. */
const API_HEADERS = ['etag', 'location', 'link', 'idempotent-replayed', 'www-authenticate', 'accept-encoding',
  'retry-after',
  'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-request-id']
const METHODS = ['get', 'head', 'put', 'post', 'delete', 'patch']

const pointer = (...parts: string[]) => parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')

async function loadDocument (app: FastifyInstance): Promise<OpenApi> {
  const res = await app.inject({ url: '/openapi.json' })
  assert.equal(res.statusCode, 200)
  return res.json<OpenApi>()
}

function operations (doc: OpenApi): Array<{ path: string, method: string, operation: Operation }> {
  return Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item)
    .filter(([method]) => METHODS.includes(method))
    .map(([method, operation]) => ({ path, method, operation })))
}

/** Validates recorded responses against the document, compiled with ajv (JSON Schema 2020-12, as OpenAPI 3.1). */
class ResponseChecker {
  readonly seen = new Map<string, Set<string>>()
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true })

  constructor (private readonly doc: OpenApi) {
    addFormats.default(this.ajv)
    this.ajv.addSchema(doc as unknown as Json, 'openapi.json')
  }

  check (path: string, method: string, res: LightMyRequestResponse): void {
    const operation = this.doc.paths[path]?.[method]
    assert.ok(operation, `${method.toUpperCase()} ${path} is not in the document`)
    const status = String(res.statusCode)
    const where = `${operation.operationId} → ${status}`
    // A 4xx must be declared by itself; a 5xx may fall under 5XX.
    const key = status in operation.responses ? status : res.statusCode >= 500 ? '5XX' : undefined
    assert.ok(key !== undefined, `${where} is answered but not declared`)
    const declared = operation.responses[key]
    assert.ok(declared, `${where} is answered but not declared`)
    if (!this.seen.has(operation.operationId)) this.seen.set(operation.operationId, new Set())
    this.seen.get(operation.operationId)?.add(key)

    // A header the document says is always sent is sent (a shared one is a component).
    const headers = Object.entries(declared.headers ?? {}).map(([name, header]): [string, Header] =>
      [name, '$ref' in header
        ? this.doc.components.headers[header.$ref.replace('#/components/headers/',
          '')] as Header
        : header])
    for (const [name, header] of headers) {
      if (header.required === true) {
        assert.ok(res.headers[name.toLowerCase()] !== undefined, `${where} must send ${name}`)
      }
    }
    for (const header of API_HEADERS) {
      if (res.headers[header] === undefined) continue
      const documented = headers.find(([name]) => name.toLowerCase() === header)
      assert.ok(documented, `${where} sends ${header} but does not document it`)
      const validate = this.ajv.compile(documented[1].schema)
      assert.ok(validate(res.headers[header]), `${where}: header ${header} ${this.ajv.errorsText(validate.errors)}`)
    }

    // A HEAD answer carries the GET's Content-Type but never a body.
    if (method === 'head') {
      assert.equal(res.body, '', `${where} has a body`)
      return
    }
    if (declared.content === undefined) {
      assert.equal(res.body, '', `${where} has a body but declares none`)
      assert.equal(res.headers['content-type'], undefined, `${where} has a Content-Type but declares no body`)
      return
    }
    const mediaType = String(res.headers['content-type']).split(';')[0] ?? ''
    assert.ok(mediaType in declared.content, `${where} answers ${mediaType}, not declared`)
    const validate = this.ajv.compile(
      { $ref: `openapi.json#/${pointer('paths', path, method, 'responses', key, 'content', mediaType, 'schema')}` })
    assert.ok(validate(res.json()), `${where}: ${this.ajv.errorsText(validate.errors)} in ${res.body}`)
  }
}

test('every operation is described: operationId, summary, description, tags, and the ' +
  'statuses its inputs imply', async (t) => {
  const app = await buildTestApp(t)
  const doc = await loadDocument(app)
  const all = operations(doc)
  assert.deepEqual(all.map(({ operation }) => operation.operationId).sort(), [
    ...RESOURCE_OPERATIONS.map(({ operationId }) => operationId),
    'createWebhook', 'deleteWebhook', 'getHealth', 'getLiveness', 'getReadiness', 'getWebhook',
    'getWebhookDelivery', 'getWebhookSecret', 'headHealth', 'headLiveness', 'headReadiness', 'headWebhook',
    'headWebhookDeliveries',
    'headWebhookDelivery', 'headWebhookSecret', 'headWebhooks',
    'headWebhookEventTypes', 'listWebhookDeliveries', 'listWebhookEventTypes', 'listWebhooks', 'recoverWebhook',
    'retryWebhookDelivery', 'rotateWebhookSecret', 'testWebhook', 'updateWebhook'].sort())
  for (const { path, method, operation } of all) {
    const id = operation.operationId
    assert.ok(operation.summary && operation.description, `${id} has a summary and a description`)
    assert.ok(operation.tags && operation.tags.length > 0, `${id} has tags`)
    const statuses = Object.keys(operation.responses)
    const expect = (status: string,
      why: string) => assert.ok(statuses.includes(status), `${id} must declare ${status}: ${why}`)
    expect('4XX', 'any client error')
    expect('5XX', 'any server error')
    const params = operation.parameters ?? []
    if (operation.security?.length !== 0) {
      expect('401', 'it needs a token')
      expect('403', 'it needs a scope')
    }
    if (params.length > 0 || operation.requestBody) expect('400', 'it validates its input')
    if (path.includes('{id}')) expect('404', 'it addresses one plant')
    if (operation.requestBody) {
      expect('413', 'it reads a body')
      expect('415', 'it reads a body of some media types only')
    }
    if (params.some((param) => param.in === 'header' && param.name === 'if-match')) expect('412', 'it honours If-Match')
    const honours = (name: string) => params.some((param) => param.in === 'header' && param.name === name)
    // If-None-Match makes a read a 304, a write a 412.
    if (honours('if-none-match')) {
      expect(method === 'get' || method === 'head' ? '304' : '412', 'it honours If-None-Match')
    }
    if (params.some((param) => param.in === 'header' && param.name === 'idempotency-key')) {
      expect('422', 'a key can be reused with another body')
    }
    for (const [status, response] of Object.entries(operation.responses)) {
      assert.ok(response.description, `${id} → ${status} has a description`)
      if (method === 'head') {
        assert.equal(response.content, undefined, `${id} → ${status}: a HEAD answer has no body`)
      } else if (/^[45]/.test(status)) {
        assert.deepEqual(schemasOf(response.content), { 'application/json': { $ref: '#/components/schemas/Error' } },
          `${id} → ${status} is an Error`)
      }
    }
  }
})

test('request bodies and lists use the named schemas, and their examples are valid', async (t) => {
  const app = await buildTestApp(t)
  const doc = await loadDocument(app)
  const body = (path: string, method: string) => schemasOf(doc.paths[path]?.[method]?.requestBody?.content)
  const named = (schema: { $id?: string }) => ({ $ref: `#/components/schemas/${String(schema.$id)}` })
  for (const { collection, schemas } of RESOURCES) {
    assert.deepEqual(body(`/${collection}`, 'post'), { 'application/json': named(schemas.create) })
    assert.deepEqual(body(`/${collection}/{id}`, 'put'), { 'application/json': named(schemas.replace) })
    assert.deepEqual(body(`/${collection}/{id}`, 'patch'), {
      'application/merge-patch+json': named(schemas.patch),
      'application/json': named(schemas.patch)
    })
    assert.deepEqual(schemasOf(doc.paths[`/${collection}`]?.get?.responses['200']?.content),
      { 'application/json': named(schemas.list) })
  }
  assert.deepEqual(body('/webhooks', 'post'), { 'application/json': { $ref: '#/components/schemas/NewWebhook' } })
  assert.deepEqual(body('/webhooks/{id}', 'patch'), {
    'application/merge-patch+json': { $ref: '#/components/schemas/WebhookPatch' },
    'application/json': { $ref: '#/components/schemas/WebhookPatch' }
  })
  assert.deepEqual(schemasOf(doc.paths['/webhooks']?.get?.responses['200']?.content),
    { 'application/json': { $ref: '#/components/schemas/WebhookList' } })
  assert.deepEqual(schemasOf(doc.paths['/webhooks/{id}/deliveries']?.get?.responses['200']?.content),
    { 'application/json': { $ref: '#/components/schemas/WebhookDeliveryList' } })
  const ajv = new Ajv2020({ strict: false })
  addFormats.default(ajv)
  ajv.addSchema(doc as unknown as Json, 'openapi.json')
  for (const [name, schema] of Object.entries(doc.components.schemas)) {
    const validate = ajv.compile({ $ref: `openapi.json#/components/schemas/${name}` })
    for (const example of (schema.examples as unknown[] | undefined) ?? []) {
      assert.ok(validate(example), `${name} example ${JSON.stringify(example)}: ${ajv.errorsText(validate.errors)}`)
    }
  }
})

type Call = (path: string, options: InjectOptions) => Promise<LightMyRequestResponse>

/**
 * Every status a resource's routes declare, with bodies made of its declaration's example: each
 * body schema's fields the example has (the id aside), so any declared resource is exercised alike.
 */
async function exerciseResource (t: TestContext, app: FastifyInstance, call: Call,
  resource: ResourceDefinition): Promise<void> {
  const items = `/${resource.collection}`
  const one = `${items}/{id}`
  const example = resource.example as unknown as Json
  const fieldsOf = (schema: { properties?: object }): Json => Object.fromEntries(Object.keys(schema.properties ?? {})
    .filter((key) => key !== 'id' && key in example).map((key) => [key, example[key]]))
  const body = fieldsOf(resource.schemas.create)
  const keyed = { ...AUTH, 'idempotency-key': 'k' }
  const huge = {
    headers: { 'content-type': 'application/json', ...AUTH },
    payload: JSON.stringify({ ...body, padding: 'x'.repeat(1024 * 1024) })
  }
  const notJson = { headers: { ...AUTH, 'content-type': 'text/plain' }, payload: 'x' }

  // create: 201, its replay, 422 (the key, another body), 409 (a taken id), 400, 401, 413, 415
  const created = await call(items, { method: 'POST', url: items, headers: keyed, payload: body })
  await call(items, { method: 'POST', url: items, headers: keyed, payload: body })
  await call(items, { method: 'POST', url: items, headers: keyed, payload: { ...body, id: 5 } })
  await call(items, {
    method: 'POST',
    url: items,
    headers: AUTH,
    payload: { ...body, id: Number(created.json<Json>().id) }
  })
  await call(items, { method: 'POST', url: items, headers: AUTH, payload: { ...body, 'unknown-field': 1 } })
  await call(items, { method: 'POST', url: items, payload: body })
  await call(items, { method: 'POST', url: items, ...huge })
  await call(items, { method: 'POST', url: items, ...notJson })
  const replaced = String(
    (await call(items, { method: 'POST', url: items, headers: AUTH, payload: body })).headers.location)
  const deleted = String(
    (await call(items, { method: 'POST', url: items, headers: AUTH, payload: body })).headers.location)
  const first = String(created.headers.location)
  const etag = String(created.headers.etag)

  // list: 200, 400, 401, and a store failure (5XX, not declared)
  for (const method of ['GET', 'HEAD'] as const) {
    for (const [query, headers] of [['?limit=1', AUTH], ['?limit=0', AUTH], ['', {}]] as const) {
      await call(items, { method, url: `${items}${query}`, headers })
    }
  }
  const repositories = app.store as unknown as Record<string, Repository<ResourceTypes>>
  const list = t.mock.method(repositories[resource.collection] as Repository<ResourceTypes>,
    'list', async () => { throw new Error('SQLITE_CORRUPT at /secret/path') })
  const failed = await call(items, { url: items, headers: AUTH })
  assert.deepEqual(failed.json(), { error: 500, message: 'Internal Server Error' })
  list.mock.restore()

  // get: 200, 304, 412, 400, 401, 404
  for (const method of ['GET', 'HEAD'] as const) {
    for (const headers of [AUTH, { ...AUTH, 'if-none-match': etag }, { ...AUTH, 'if-match': '"stale"' }, {}]) {
      await call(one, { method, url: first, headers })
    }
    await call(one, { method, url: `${items}/x`, headers: AUTH })
    await call(one, { method, url: `${items}/99`, headers: AUTH })
  }

  // replace and update: 200, 400, 401, 404, 412, 413, 415
  for (const [method, payload] of [['PUT', fieldsOf(resource.schemas.replace)],
    ['PATCH', fieldsOf(resource.schemas.patch)]] as const) {
    await call(one, { method, url: replaced, headers: AUTH, payload })
    await call(one, { method, url: replaced, headers: AUTH, payload: { ...payload, 'unknown-field': 1 } })
    await call(one, { method, url: replaced, payload })
    await call(one, { method, url: `${items}/99`, headers: AUTH, payload })
    await call(one, { method, url: replaced, headers: { ...AUTH, 'if-match': '"stale"' }, payload })
    await call(one, { method, url: replaced, ...huge })
    await call(one, { method, url: replaced, ...notJson })
  }
  await call(one, {
    method: 'PATCH',
    url: replaced,
    headers: { ...AUTH, 'content-type': 'application/merge-patch+json' },
    payload: JSON.stringify(fieldsOf(resource.schemas.patch))
  })

  // delete: 412, 204, 404, 400, 401
  await call(one, { method: 'DELETE', url: deleted, headers: { ...AUTH, 'if-match': '"stale"' } })
  await call(one, { method: 'DELETE', url: deleted, headers: AUTH })
  await call(one, { method: 'DELETE', url: deleted, headers: AUTH })
  await call(one, { method: 'DELETE', url: `${items}/-`, headers: AUTH })
  await call(one, { method: 'DELETE', url: first })
}

test('every declared status is answered, every answer is declared, and every answer validates ' +
  'against the document', async (t) => {
  const reader = scopedToken('reader', ['plants:read'])
  const hooks = scopedToken('hooks', ['webhooks'])
  const app = await buildTestApp(t, {
    API_TOKENS: `${TOKEN},${OTHER_TOKEN}`,
    API_TOKENS_FILE: tokensFile([reader, hooks])
  })
  const doc = await loadDocument(app)
  const checker = new ResponseChecker(doc)
  const call = async (path: string, options: InjectOptions): Promise<LightMyRequestResponse> => {
    const res = await app.inject(options)
    checker.check(path, String(options.method ?? 'GET').toLowerCase(), res)
    return res
  }
  const json = { 'content-type': 'application/json', ...AUTH }
  const huge = JSON.stringify({ name: 'a', tag: 'x'.repeat(1024 * 1024) })

  // health
  await call('/health', { url: '/health' })
  const ping = t.mock.method(app.store, 'ping', async () => { throw new Error('down') })
  await call('/health', { url: '/health' })
  await call('/health/ready', { url: '/health/ready' })
  ping.mock.restore()
  await call('/health/ready', { url: '/health/ready' })
  await call('/health/live', { url: '/health/live' })

  await call('/health', { method: 'HEAD', url: '/health' })
  await call('/health/live', { method: 'HEAD', url: '/health/live' })
  await call('/health/ready', { method: 'HEAD', url: '/health/ready' })
  const headPing = t.mock.method(app.store, 'ping', async () => { throw new Error('down') })
  await call('/health', { method: 'HEAD', url: '/health' })
  await call('/health/ready', { method: 'HEAD', url: '/health/ready' })
  headPing.mock.restore()

  for (const resource of RESOURCES) await exerciseResource(t, app, call, resource)

  // webhooks (deliveries to a public address fail under the test network rule, without a connection)
  const other = { authorization: `Bearer ${OTHER_TOKEN}` }
  const hook = await call('/webhooks', {
    method: 'POST',
    url: '/webhooks',
    headers: AUTH,
    payload: { url: PUBLIC_RECEIVER }
  })
  await call('/webhooks', { method: 'POST', url: '/webhooks', headers: AUTH, payload: { url: 'http://127.0.0.1/' } })
  await call('/webhooks', { method: 'POST', url: '/webhooks', payload: { url: PUBLIC_RECEIVER } })
  await call('/webhooks', { method: 'POST', url: '/webhooks', headers: json, payload: huge })
  await call('/webhooks', {
    method: 'POST',
    url: '/webhooks',
    headers: { ...AUTH, 'content-type': 'text/plain' },
    payload: PUBLIC_RECEIVER
  })
  for (let i = 0; i < 25; i++) {
    await app.inject({ method: 'POST', url: '/webhooks', headers: other, payload: { url: PUBLIC_RECEIVER } })
  }
  await call('/webhooks', { method: 'POST', url: '/webhooks', headers: other, payload: { url: PUBLIC_RECEIVER } })
  const hookUrl = String(hook.headers.location)
  for (const method of ['GET', 'HEAD'] as const) {
    await call('/webhooks', { method, url: '/webhooks?limit=1', headers: AUTH })
    await call('/webhooks', { method, url: '/webhooks?limit=0', headers: AUTH })
    await call('/webhooks', { method, url: '/webhooks' })
    await call('/webhooks/{id}', { method, url: hookUrl, headers: AUTH })
    await call('/webhooks/{id}', { method, url: '/webhooks/x', headers: AUTH })
    await call('/webhooks/{id}', { method, url: hookUrl })
    await call('/webhooks/{id}', { method, url: hookUrl, headers: other })
  }
  await call('/webhooks/{id}', {
    method: 'PATCH',
    url: hookUrl,
    headers: { ...AUTH, 'content-type': 'application/merge-patch+json' },
    payload: '{"description":null}'
  })
  await call('/webhooks/{id}', { method: 'PATCH', url: hookUrl, headers: AUTH, payload: { events: ['plant.moved'] } })
  await call('/webhooks/{id}', { method: 'PATCH', url: hookUrl, payload: {} })
  await call('/webhooks/{id}', { method: 'PATCH', url: hookUrl, headers: other, payload: {} })
  await call('/webhooks/{id}', { method: 'PATCH', url: hookUrl, headers: json, payload: huge })
  await call('/webhooks/{id}', {
    method: 'PATCH',
    url: hookUrl,
    headers: { ...AUTH, 'content-type': 'text/plain' },
    payload: '{}'
  })
  await call('/webhooks/{id}/rotate-secret', { method: 'POST', url: `${hookUrl}/rotate-secret`, headers: AUTH })
  await call('/webhooks/{id}/rotate-secret', { method: 'POST', url: '/webhooks/x/rotate-secret', headers: AUTH })
  await call('/webhooks/{id}/rotate-secret', { method: 'POST', url: `${hookUrl}/rotate-secret` })
  await call('/webhooks/{id}/rotate-secret', { method: 'POST', url: `${hookUrl}/rotate-secret`, headers: other })
  await call('/webhooks/{id}/rotate-secret', {
    method: 'POST',
    url: `${hookUrl}/rotate-secret`,
    headers: AUTH,
    payload: { secret: SECRET_EXAMPLE }
  })
  await call('/webhooks/{id}/rotate-secret', {
    method: 'POST',
    url: `${hookUrl}/rotate-secret`,
    headers: json,
    payload: huge
  })
  await call('/webhooks/{id}/rotate-secret', {
    method: 'POST',
    url: `${hookUrl}/rotate-secret`,
    headers: { ...AUTH, 'content-type': 'text/plain' },
    payload: 'x'
  })
  for (const method of ['GET', 'HEAD'] as const) {
    await call('/webhooks/{id}/secret', { method, url: `${hookUrl}/secret`, headers: AUTH })
    await call('/webhooks/{id}/secret', { method, url: '/webhooks/x/secret', headers: AUTH })
    await call('/webhooks/{id}/secret', { method, url: `${hookUrl}/secret` })
    await call('/webhooks/{id}/secret', { method, url: `${hookUrl}/secret`, headers: other })
  }
  await call('/plants', { method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'Ivy' } })
  for (const method of ['GET', 'HEAD'] as const) {
    await call('/webhooks/{id}/deliveries', { method, url: `${hookUrl}/deliveries`, headers: AUTH })
    await call('/webhooks/{id}/deliveries', { method, url: `${hookUrl}/deliveries?before=x`, headers: AUTH })
    await call('/webhooks/{id}/deliveries', { method, url: `${hookUrl}/deliveries` })
    await call('/webhooks/{id}/deliveries', { method, url: `${hookUrl}/deliveries`, headers: other })
  }
  const deliveries = await app.inject({ url: `${hookUrl}/deliveries`, headers: AUTH })
  const retryUrl = `${hookUrl}/deliveries/${String(deliveries.json<Array<{ id: number }>>()[0]?.id)}/retry`
  const retryPath = '/webhooks/{id}/deliveries/{deliveryId}/retry'
  const deliveryUrl = retryUrl.slice(0, -'/retry'.length)
  for (const method of ['GET', 'HEAD'] as const) {
    await call('/webhooks/{id}/deliveries/{deliveryId}', { method, url: deliveryUrl, headers: AUTH })
    await call('/webhooks/{id}/deliveries/{deliveryId}', { method, url: `${hookUrl}/deliveries/x`, headers: AUTH })
    await call('/webhooks/{id}/deliveries/{deliveryId}', { method, url: deliveryUrl })
    await call('/webhooks/{id}/deliveries/{deliveryId}', { method, url: deliveryUrl, headers: other })
    await call('/webhooks/{id}/deliveries', {
      method,
      url: `${hookUrl}/deliveries?status=failed&eventType=plant.created`,
      headers: AUTH
    })
  }
  await call(retryPath, { method: 'POST', url: retryUrl, headers: AUTH })
  await call(retryPath, { method: 'POST', url: `${hookUrl}/deliveries/x/retry`, headers: AUTH })
  await call(retryPath, { method: 'POST', url: retryUrl })
  await call(retryPath, { method: 'POST', url: retryUrl, headers: other })
  const since = { since: '2026-01-01T00:00:00Z' }
  await call('/webhooks/{id}/recover', { method: 'POST', url: `${hookUrl}/recover`, headers: AUTH, payload: since })
  await call('/webhooks/{id}/recover', {
    method: 'POST',
    url: `${hookUrl}/recover`,
    headers: AUTH,
    payload: { since: 'now' }
  })
  await call('/webhooks/{id}/recover', { method: 'POST', url: `${hookUrl}/recover`, payload: since })
  await call('/webhooks/{id}/recover', { method: 'POST', url: `${hookUrl}/recover`, headers: other, payload: since })
  await call('/webhooks/{id}/recover', { method: 'POST', url: `${hookUrl}/recover`, headers: json, payload: huge })
  await call('/webhooks/{id}/recover', {
    method: 'POST',
    url: `${hookUrl}/recover`,
    headers: { ...AUTH, 'content-type': 'text/plain' },
    payload: 'x'
  })
  await call('/webhooks/{id}/test', { method: 'POST', url: `${hookUrl}/test`, headers: AUTH })
  await call('/webhooks/{id}/test', { method: 'POST', url: '/webhooks/x/test', headers: AUTH })
  await call('/webhooks/{id}/test', { method: 'POST', url: `${hookUrl}/test` })
  await call('/webhooks/{id}/test', { method: 'POST', url: `${hookUrl}/test`, headers: other })
  const busy = t.mock.method(app.webhooks, 'sendTest', async () => { throw webhookBusy(1) })
  await call('/webhooks/{id}/test', { method: 'POST', url: `${hookUrl}/test`, headers: AUTH })
  busy.mock.restore()
  for (const method of ['GET', 'HEAD'] as const) {
    await call('/webhooks/event-types', { method, url: '/webhooks/event-types', headers: AUTH })
    await call('/webhooks/event-types', { method, url: '/webhooks/event-types' })
  }
  await call('/webhooks/{id}', { method: 'PATCH', url: hookUrl, headers: AUTH, payload: { disabled: true } })
  await call(retryPath, { method: 'POST', url: retryUrl, headers: AUTH })
  await call('/webhooks/{id}', { method: 'DELETE', url: hookUrl, headers: AUTH })
  await call('/webhooks/{id}', { method: 'DELETE', url: hookUrl, headers: AUTH })
  await call('/webhooks/{id}', { method: 'DELETE', url: '/webhooks/-', headers: AUTH })
  await call('/webhooks/{id}', { method: 'DELETE', url: hookUrl })

  // 403: every secured operation, with a token that lacks its scope.
  for (const { path, method, operation } of operations(doc)) {
    if (operation.security?.length === 0) continue
    const lacking = path.startsWith('/webhooks') ? reader : hooks
    await call(path, {
      method: method.toUpperCase() as 'GET',
      url: path.replace(/\{[^}]+\}/g, '1'),
      headers: { authorization: `Bearer ${lacking.token}` }
    })
  }

  for (const { operation } of operations(doc)) {
    const declared = Object.keys(operation.responses).filter((status) => status !== '4XX' && status !== '5XX')
    const answered = [...(checker.seen.get(operation.operationId) ?? [])].filter((status) => status !== '5XX')
    assert.deepEqual(answered.sort(), declared.sort(), `${operation.operationId}: statuses answered vs declared`)
  }
})

test('the webhooks section documents every event type GET /webhooks/event-types lists: a signed POST of { type, ' +
  'timestamp, data }, its webhook-* headers, and what answers mean', async (t) => {
  const app = await buildTestApp(t)
  const doc = await app.inject({ url: '/openapi.json' }).then(
    (res) => res.json<OpenApi & { webhooks: Record<string, Record<string, Operation>> }>())
  const catalog = (await app.inject({ url: '/webhooks/event-types', headers: AUTH })).json<Array<{ type: string }>>()
  assert.deepEqual(Object.keys(doc.webhooks), catalog.map(({ type }) => type))
  assert.deepEqual(Object.keys(doc.webhooks), EVENT_TYPES)
  const webhookSecret = doc.components.schemas.WebhookSecret as { properties: { secret: { examples: string[] } } }
  const secretExample = webhookSecret.properties.secret.examples[0]
  assert.ok(secretExample !== undefined)
  for (const [type, item] of Object.entries(doc.webhooks)) {
    assert.deepEqual(Object.keys(item), ['post'])
    const operation = item.post as Omit<Operation, 'parameters'> & {
      parameters: Array<{
        name: string,
        in: string,
        required: boolean,
        example: string
      }>
    }
    assert.deepEqual(operation.tags, ['webhooks'])
    assert.ok(operation.summary && operation.description, type)
    assert.deepEqual(operation.parameters.map((parameter) => [parameter.name, parameter.in, parameter.required]),
      [['webhook-id', 'header', true], ['webhook-timestamp', 'header', true], ['webhook-signature', 'header', true]])
    // A test event is not retried, and a 410 to it disables nothing.
    assert.deepEqual(Object.keys(operation.responses),
      type === 'webhook.test' ? ['2XX', '4XX', '5XX'] : ['410', '2XX', '4XX', '5XX'])
    const media = operation.requestBody?.content['application/json'] as { schema: Json, example: unknown } | undefined
    assert.ok(media !== undefined, type)
    const name = String(media.schema.$ref).replace('#/components/schemas/', '')
    const schema = doc.components.schemas[name] as { properties: Record<string, Json>, required: string[] }
    assert.deepEqual(schema.properties.type, {
      type: 'string',
      enum: [type],
      description: 'The event type',
      examples: [type]
    })
    assert.equal(schema.properties.timestamp?.format, 'date-time')
    assert.deepEqual(schema.properties.data, type === 'webhook.test'
      ? {
          type: 'object',
          additionalProperties: false,
          required: ['subscriptionId'],
          properties: { subscriptionId: { type: 'integer', description: 'The subscription tested' } }
        }
      : {
          $ref: '#/components/schemas/' +
            String(RESOURCES.find(({ name }) => type.startsWith(`${name}.`))?.schemas.representation.$id)
        })
    assert.deepEqual(schema.required, ['type', 'timestamp', 'data'])
    // The example headers are a real signature of the example body with the example secret.
    const [id, timestamp, signature] = operation.parameters.map((parameter) => parameter.example)
    const payload = JSON.stringify(media.example)
    assert.equal(signature, new Webhook(secretExample).sign(String(id), new Date(Number(timestamp) * 1000), payload))
  }
})
