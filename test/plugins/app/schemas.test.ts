import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import {
  ajvOptions, onFirstCall, sharedSerializer,
  validatorWithoutBodyCoercion
} from '../../../plugins/app/schemas.js'

interface Compiled { validate: unknown, serialize: unknown }

/**
 * An app with the service's compilers and one shared schema, `Thing`, whose `count` has the given type.
 * POST /things echoes its body; the handler hands out the route's compiled functions for comparison.
 */
async function appWith (count: 'string' | 'integer', compiled: Compiled[]): Promise<FastifyInstance> {
  const app = Fastify({
    ajv: ajvOptions,
    schemaController: {
      compilersFactory: {
        buildValidator: validatorWithoutBodyCoercion,
        buildSerializer: sharedSerializer
      }
    }
  })
  app.addSchema({
    $id: 'Thing',
    type: 'object',
    properties: { count: { type: count } },
    required: ['count'],
    additionalProperties: false
  })
  // A fresh schema object per app, as the routes make them: equal in content only.
  app.post('/things', {
    schema: {
      querystring: { type: 'object', properties: { times: { type: 'integer' } } },
      body: { $ref: 'Thing#' },
      response: { 200: { $ref: 'Thing#' } }
    }
  }, async (request, reply) => {
    compiled.push({ validate: request.getValidationFunction('body'), serialize: reply.getSerializationFunction('200') })
    return request.body
  })
  await app.ready()
  return app
}

test('apps with the same schemas share their compiled validators and serializers', async (t) => {
  const compiled: Compiled[] = []
  for (let i = 0; i < 2; i++) {
    const app = await appWith('integer', compiled)
    t.after(async () => { await app.close() })
    const res = await app.inject({ method: 'POST', url: '/things?times=2', payload: { count: 5 } })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, '{"count":5}')
  }
  const [first, second] = compiled
  assert.ok(first !== undefined && second !== undefined)
  assert.equal(typeof first.validate, 'function')
  assert.equal(typeof first.serialize, 'function')
  assert.equal(second.validate, first.validate)
  assert.equal(second.serialize, first.serialize)
})

test('apps whose shared schemas differ never share one: each validates and serializes by its own', async (t) => {
  const compiled: Compiled[] = []
  const integers = await appWith('integer', compiled)
  t.after(async () => { await integers.close() })
  const strings = await appWith('string', compiled)
  t.after(async () => { await strings.close() })

  // The body is not coerced ('5' is no integer, 5 no string); the query string is ('2' is an integer).
  const asNumber = { method: 'POST', url: '/things?times=2', payload: { count: 5 } } as const
  const asText = { method: 'POST', url: '/things?times=2', payload: { count: '5' } } as const
  assert.equal((await integers.inject(asNumber)).body, '{"count":5}')
  assert.equal((await strings.inject(asText)).body, '{"count":"5"}')
  for (const [app, request, type] of [[integers, asText, 'integer'], [strings, asNumber, 'string']] as const) {
    const res = await app.inject(request)
    assert.equal(res.statusCode, 400)
    assert.equal(res.json().message, `body/count must be ${type}`)
  }
  const badQuery = await integers.inject({ ...asNumber, url: '/things?times=two' })
  assert.equal(badQuery.statusCode, 400)
  assert.equal(badQuery.json().message, 'querystring/times must be integer')

  const [ofIntegers, ofStrings] = compiled
  assert.ok(ofIntegers !== undefined && ofStrings !== undefined)
  assert.notEqual(ofStrings.validate, ofIntegers.validate)
  assert.notEqual(ofStrings.serialize, ofIntegers.serialize)
})

test('a compiled function is made on its first call, once; Fastify reads its errors and schemaEnv ' +
  'through the stand-in', () => {
  let compiles = 0
  const compiled = Object.assign((value: unknown) => {
    compiled.errors = value === 1 ? null : [{ message: 'must be 1' }]
    return value === 1
  }, { errors: null as unknown, schemaEnv: { root: true } })
  const standIn = onFirstCall(() => { compiles++; return compiled })
  assert.equal(compiles, 0)
  assert.deepEqual(standIn.schemaEnv, { root: true })
  assert.equal(compiles, 1)
  assert.equal(standIn(2), false)
  assert.deepEqual(standIn.errors, [{ message: 'must be 1' }])
  assert.equal(standIn(1), true)
  assert.equal(standIn.errors, null)
  assert.equal(compiles, 1)
})

test('an app starts without an Ajv instance or a compiled validator: the first request ' +
  'that needs one makes it', async (t) => {
  let instances = 0
  const app = Fastify({
    ajv: { ...ajvOptions, plugins: [<Ajv>(ajv: Ajv): Ajv => { instances++; return ajv }] },
    schemaController: {
      compilersFactory: {
        buildValidator: validatorWithoutBodyCoercion,
        buildSerializer: sharedSerializer
      }
    }
  })
  t.after(async () => { await app.close() })
  app.post('/counts', { schema: { body: { type: 'object', properties: { count: { type: 'integer' } } } } },
    async (request) => request.body)
  await app.ready()
  assert.equal(instances, 0)
  const res = await app.inject({ method: 'POST', url: '/counts', payload: { count: 'two' } })
  assert.equal(res.statusCode, 400)
  assert.equal(res.json().message, 'body/count must be integer')
  // Only the body's (exact) instance: nothing of this app has needed the coercing one.
  assert.equal(instances, 1)
})
