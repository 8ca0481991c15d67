import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { AUTH, buildTestApp, TOKEN } from '../helpers/app.js'
import type { Cleanup } from '../helpers/cleanup.js'

/**
 * Property-based: whatever arrives (ids, query strings, headers, JSON bodies), the answer is never a
 * 5xx, every non-2xx is exactly `{ error, message }`, and a refused request changes nothing.
 */

const printable = (maxLength: number): fc.Arbitrary<string> => fc.stringMatching(
  new RegExp(`^[\\x20-\\x7e]{0,${maxLength}}$`))

const hostileText = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', '\ud800', '🌱'.repeat(300), 'a'.repeat(10_000), '__proto__', 'constructor', 'null',
    'true')
)

const numberLike = fc.oneof(
  fc.integer().map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.double().map(String),
  fc.constantFrom('0', '-0', '+1', '01', '1e3', '0x10', '1.0', ' 1', '1 ', '9223372036854775807', '9223372036854775808',
    '-9223372036854775808', '-9223372036854775809', '9007199254740993', 'NaN', 'Infinity', '1,2')
)

/** Percent-encodes any string, lone surrogates included (encodeURIComponent throws on those). */
const percentEncode = (text: string): string => [...Buffer.from(text)].map(
  (byte) => `%${byte.toString(16).padStart(2, '0')}`).join('')
const encode = (text: string): string => /[\ud800-\udfff]/.test(text) ? percentEncode(text) : encodeURIComponent(text)

const pathId = fc.oneof(
  numberLike.map(encode),
  hostileText.map(encode),
  // Bytes that are not UTF-8 at all, e.g. %FF%FE.
  fc.uint8Array({ minLength: 1, maxLength: 12 }).map(
    (bytes) => [...bytes].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join(''))
)

const queryString = fc.array(fc.tuple(
  fc.oneof(fc.constantFrom('limit', 'after', 'tag', '__proto__', 'constructor', 'limit[]', 'tag[a]'),
    fc.string({ maxLength: 8 })),
  fc.oneof(numberLike, hostileText)
), { maxLength: 4 }).map((pairs) => pairs.map(([key, value]) => `${encode(key)}=${encode(value)}`).join('&'))

const jsonValue = fc.jsonValue({ maxDepth: 6 })
const field = fc.oneof(jsonValue, hostileText, numberLike.map(Number),
  fc.constantFrom(2 ** 53, 2 ** 53 + 2, 1e308, -1, 0, 1.5))
const plantLike = fc.record({ id: field, name: field, tag: field, extra: field }, { requiredKeys: [] })

/** Raw bodies: JSON.stringify cannot write duplicate keys, huge literals or deep nesting. */
const rawBody = fc.oneof(
  jsonValue.map((value) => JSON.stringify(value)),
  plantLike.map((value) => JSON.stringify(value)),
  fc.tuple(hostileText, hostileText).map(([a, b]) => `{"name":${JSON.stringify(a)},"name":${JSON.stringify(b)}}`),
  fc.constantFrom(
    '{"__proto__":{"name":"x"},"name":"Fern"}',
    '{"constructor":{"prototype":{"polluted":true}},"name":"Fern"}',
    '{"name":"Fern","__proto__":{"admin":true}}',
    '{"id":1e400,"name":"Fern"}',
    '{"id":123456789012345678901234567890,"name":"Fern"}',
    '{"id":9007199254740993,"name":"Fern"}',
    '{"id":-0,"name":"Fern"}',
    '{"name":"\\ud800"}',
    `{"name":"Fern","tag":${'['.repeat(4000)}${']'.repeat(4000)}}`,
    '['.repeat(8000),
    '{"name":"Fern"',
    '',
    'null',
    '{"name":"Fern"}{"name":"Ivy"}'
  ),
  hostileText
)

const contentTypes = ['application/json', 'application/json; charset=utf-8', 'application/merge-patch+json',
  'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1',
  'multipart/form-data; boundary=x', 'garbage']
const contentType = fc.option(fc.constantFrom(...contentTypes), { nil: undefined })

const headers = fc.record({
  authorization: fc.oneof(fc.constant(AUTH.authorization), fc.constant(AUTH.authorization), printable(60),
    fc.constant(`bearer ${TOKEN}`)),
  'if-match': fc.oneof(printable(60), fc.constantFrom('*', '"x"', 'W/"x"', '"a", "b"')),
  'if-none-match': fc.oneof(printable(60), fc.constantFrom('*', '"x"', 'W/"x"')),
  'idempotency-key': printable(300),
  'content-type': fc.constantFrom(...contentTypes),
  'x-forwarded-for': printable(40),
  accept: fc.constantFrom('application/json', 'text/html', '*/*', 'application/xml')
}, { requiredKeys: ['authorization'] })

const operation = fc.constantFrom(
  { method: 'GET', path: (_id: string) => '/plants' },
  { method: 'POST', path: (_id: string) => '/plants' },
  { method: 'GET', path: (id: string) => `/plants/${id}` },
  { method: 'PUT', path: (id: string) => `/plants/${id}` },
  { method: 'PATCH', path: (id: string) => `/plants/${id}` },
  { method: 'DELETE', path: (id: string) => `/plants/${id}` },
  { method: 'HEAD', path: (id: string) => `/plants/${id}` },
  { method: 'GET', path: (_id: string) => '/health' },
  { method: 'OPTIONS', path: (id: string) => `/plants/${id}` }
) as fc.Arbitrary<{ method: NonNullable<InjectOptions['method']>, path: (id: string) => string }>

const request = fc.record({
  operation,
  id: fc.oneof(pathId, fc.constantFrom('1', '2', '3', '9007199254740993')),
  query: queryString,
  headers,
  body: fc.option(rawBody, { nil: undefined })
})

async function snapshot (app: FastifyInstance): Promise<string> {
  const page = await app.store.plants.list({ limit: 1000 })
  return JSON.stringify(page.items, (_key, value: unknown) => typeof value === 'bigint' ? String(value) : value)
}

async function seededApp (t: Cleanup): Promise<FastifyInstance> {
  const app = await buildTestApp(t, { RATE_LIMIT_MAX: '0' })
  for (const id of [1n, 2n, 3n, 9007199254740993n]) {
    await app.store.plants.create({ id, name: `Plant ${id}`, tag: 'seed' })
  }
  return app
}

test('arbitrary requests against every operation: never a 5xx, non-2xx always in the Error shape, ' +
  'refusals change nothing', async (t) => {
  const app = await seededApp(t)
  await fc.assert(fc.asyncProperty(request, async ({ operation, id, query, headers, body }) => {
    const before = await snapshot(app)
    const url = operation.path(id) + (query === '' ? '' : `?${query}`)
    const res = await app.inject({
      method: operation.method,
      url,
      headers,
      ...(body !== undefined && { payload: body })
    })
    assert.ok(res.statusCode < 500, `${operation.method} ${url} → ${res.statusCode} ${res.body}`)
    if (res.statusCode >= 300 && res.statusCode !== 304 && operation.method !== 'HEAD') {
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${res.statusCode} ${res.body}`)
      const answer = JSON.parse(res.body) as Record<string, unknown>
      assert.deepEqual(Object.keys(answer), ['error', 'message'], res.body)
      assert.equal(answer.error, res.statusCode)
      assert.equal(typeof answer.message, 'string')
    }
    if (res.statusCode >= 300) {
      assert.equal(await snapshot(app), before, `${operation.method} ${url} → ${res.statusCode} changed the database`)
    }
  }), { numRuns: 300 })
})

test('arbitrary JSON bodies on the writes: never a 5xx, never a prototype polluted, ' +
  'refusals change nothing', async (t) => {
  const app = await seededApp(t)
  const writes = fc.constantFrom(
    { method: 'POST', url: '/plants' }, { method: 'PUT', url: '/plants/1' }, { method: 'PATCH', url: '/plants/2' }
  ) as fc.Arbitrary<{ method: NonNullable<InjectOptions['method']>, url: string }>
  await fc.assert(fc.asyncProperty(writes, rawBody, contentType, async ({ method, url }, body, type) => {
    const before = await snapshot(app)
    const res = await app.inject({
      method,
      url,
      headers: { ...AUTH, ...(type !== undefined && { 'content-type': type }) },
      payload: body
    })
    assert.ok(res.statusCode < 500, `${method} ${url} ${body.slice(0, 200)} → ${res.statusCode} ${res.body}`)
    if (res.statusCode >= 300) {
      assert.deepEqual(Object.keys(res.json()), ['error', 'message'])
      assert.equal(await snapshot(app), before)
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
    assert.equal(({} as Record<string, unknown>).admin, undefined)
  }), { numRuns: 200 })
})
