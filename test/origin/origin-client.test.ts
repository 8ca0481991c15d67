import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { AUTH, buildTestApp } from '../helpers/app.js'

/**
 * The origin's document (see test/fixtures/README.md). A client generated from it sends what it
 * describes and expects back what it describes: every answer here is checked against its schemas.
 */
const ORIGIN = JSON.parse(
  readFileSync(new URL('../../../test/fixtures/origin-plant-store.openapi.json', import.meta.url),
    'utf8')) as Record<string, unknown>

const ajv = new Ajv2020({ strict: false, allErrors: true })
addFormats.default(ajv)
// OpenAPI's integer formats, checked for range (a JSON number beyond 2^53 cannot come back exactly anyway).
ajv.addFormat('int32', {
  type: 'number',
  validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31
})
ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) })
ajv.addSchema(ORIGIN, 'origin')

/** Validates a body against the schema at this JSON pointer in the origin's document. */
function assertOrigin (pointer: string, body: unknown): void {
  const validate = ajv.getSchema(`origin#${pointer}`)
  assert.ok(validate !== undefined, `no schema at ${pointer}`)
  assert.ok(validate(body), `${JSON.stringify(body)} does not match ${pointer}: ${ajv.errorsText(validate.errors)}`)
}

const LIST_200 = '/paths/~1plants/get/responses/200/content/application~1json/schema'
const CREATE_200 = '/paths/~1plants/post/responses/200/content/application~1json/schema'
const NEW_PLANT = '/paths/~1plants/post/requestBody/content/application~1json/schema'
const ERROR = '/components/schemas/Error'

/** How a generated client calls: JSON in and out, the bearer token, the origin's paths. */
async function call (app: FastifyInstance, method: 'GET' | 'POST' | 'DELETE', url: string,
  body?: unknown): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    headers: { ...AUTH, accept: 'application/json', ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { payload: JSON.stringify(body) })
  })
}

function assertErrorAnswer (res: LightMyRequestResponse, status: number): void {
  assert.equal(res.statusCode, status, res.body)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  assertOrigin(ERROR, res.json())
  assert.equal(res.json<{ error: number }>().error, status)
}

test('the origin\'s Plant allows additional properties (so id, createdAt, updatedAt are ' +
  'fine) and requires name', () => {
  assertOrigin('/components/schemas/Plant', {
    id: 1,
    name: 'Aloe',
    tag: 'succulent',
    createdAt: '2026-01-02T03:04:05.678Z',
    updatedAt: '2026-01-02T03:04:05.678Z'
  })
  assert.equal(ajv.getSchema('origin#/components/schemas/Plant')?.({ tag: 'succulent' }), false)
  assert.equal(ajv.getSchema('origin#/components/schemas/NewPlant')?.({ name: 'Aloe' }), false,
    'the origin\'s NewPlant requires id')
})

test('a client generated from the origin\'s document: create with a NewPlant, list with limit, delete', async (t) => {
  const app = await buildTestApp(t)

  // POST /plants with a NewPlant, id included, as the origin required.
  const newPlant = { id: 4242, name: 'Aloe vera', tag: 'succulent' }
  assertOrigin(NEW_PLANT, newPlant)
  const created = await call(app, 'POST', '/plants', newPlant)
  // The origin documents 200; plant-store answers 201 Created. Generated clients accept any 2xx.
  assert.equal(created.statusCode, 201, created.body)
  assertOrigin(CREATE_200, created.json())
  assert.deepEqual({ ...created.json<Record<string, unknown>>(), createdAt: 'x', updatedAt: 'x' },
    { ...newPlant, createdAt: 'x', updatedAt: 'x' })

  const second = await call(app, 'POST', '/plants', { id: 4243, name: 'Echeveria' })
  assert.equal(second.statusCode, 201, second.body)
  assertOrigin(CREATE_200, second.json())

  // GET /plants?limit=
  const page = await call(app, 'GET', '/plants?limit=1')
  assert.equal(page.statusCode, 200)
  assertOrigin(LIST_200, page.json())
  assert.deepEqual(page.json<Array<{ id: number }>>().map((plant) => plant.id), [4242])
  const all = await call(app, 'GET', '/plants?limit=10')
  assertOrigin(LIST_200, all.json())
  assert.deepEqual(all.json<Array<{ name: string }>>().map((plant) => plant.name), ['Aloe vera', 'Echeveria'])
  const unlimited = await call(app, 'GET', '/plants')
  assertOrigin(LIST_200, unlimited.json())
  assert.equal(unlimited.json<unknown[]>().length, 2)

  // DELETE /plants/{id}: 204, no body.
  const deleted = await call(app, 'DELETE', '/plants/4242')
  assert.equal(deleted.statusCode, 204)
  assert.equal(deleted.body, '')
  assert.equal(deleted.headers['content-type'], undefined)
  const after = await call(app, 'GET', '/plants?limit=10')
  assertOrigin(LIST_200, after.json())
  assert.deepEqual(after.json<Array<{ id: number }>>().map((plant) => plant.id), [4243])
})

test('every error such a client can meet is the origin\'s Error', async (t) => {
  const app = await buildTestApp(t)
  assert.equal((await call(app, 'POST', '/plants', { id: 7, name: 'Fern' })).statusCode, 201)

  assertErrorAnswer(await call(app, 'POST', '/plants', { id: 7, name: 'Another fern' }), 409)
  assertErrorAnswer(await call(app, 'POST', '/plants', { id: 8 }), 400)
  assertErrorAnswer(await call(app, 'GET', '/plants?limit=0'), 400)
  assertErrorAnswer(await call(app, 'GET', '/plants?limit=101'), 400)
  assertErrorAnswer(await call(app, 'DELETE', '/plants/abc'), 400)
  assertErrorAnswer(await call(app, 'DELETE', '/plants/8'), 404)
  assertErrorAnswer(await app.inject({ method: 'GET', url: '/plants?limit=10' }), 401)
})
