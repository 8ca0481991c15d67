import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../../../helpers/app.js'
import { assertError, createPlant } from '../../../helpers/plants.js'

const NAME_RULE = 'body/name must be 1 to 100 characters after trimming surrounding white space'

const INEXACT_ID = 'body/id must be an integer written without a fraction or exponent: an id is an exact int64'

const post = (payload: unknown, headers: Record<string, string> = {}) =>
  ({
    method: 'POST' as const,
    url: '/plants',
    headers: { ...AUTH, ...headers },
    payload: payload as Record<string, unknown>
  })

test('name: 0 characters after trimming is a 400', async (t) => {
  const app = await buildTestApp(t)
  for (const name of ['', ' ', '  \t\n ', '\u00a0\u2003']) {
    assertError(await app.inject(post({ name })), 400, NAME_RULE)
  }
  const list = await app.inject({ url: '/plants', headers: AUTH })
  assert.deepEqual(list.json(), [])
})

test('name: 1 character after trimming is accepted and stored trimmed', async (t) => {
  const app = await buildTestApp(t)
  for (const name of ['a', '  a  ', '\ta\n']) {
    const { plant } = await createPlant(app, { name })
    assert.equal(plant.name, 'a')
  }
})

test('name: 100 characters after trimming are accepted (surrounding white space does not count)', async (t) => {
  const app = await buildTestApp(t)
  const hundred = 'x'.repeat(100)
  assert.equal((await createPlant(app, { name: hundred })).plant.name, hundred)
  assert.equal((await createPlant(app, { name: `   ${hundred}   ` })).plant.name, hundred)
  // Characters, not UTF-16 units: 100 plants-emoji (200 code units) are 100 characters.
  const emoji = '\u{1F331}'.repeat(100)
  assert.equal((await createPlant(app, { name: emoji })).plant.name, emoji)
  // Inner white space is kept and counts.
  const inner = `a${' '.repeat(98)}b`
  assert.equal((await createPlant(app, { name: ` ${inner} ` })).plant.name, inner)
})

test('name: 101 characters after trimming is a 400', async (t) => {
  const app = await buildTestApp(t)
  for (const name of ['x'.repeat(101), ` ${'x'.repeat(101)} `, '\u{1F331}'.repeat(101), `a${' '.repeat(99)}b`]) {
    assertError(await app.inject(post({ name })), 400, NAME_RULE)
  }
})

test('name is required and must be a string (no coercion of JSON types)', async (t) => {
  const app = await buildTestApp(t)
  assertError(await app.inject(post({ tag: 'x' })), 400, "body must have property 'name'")
  assertError(await app.inject(post({ name: 5 })), 400, 'body/name must be string')
  assertError(await app.inject(post({ name: null })), 400, 'body/name must be string')
  assertError(await app.inject(post({ name: ['a'] })), 400, 'body/name must be string')
})

test('tag: 1 and 50 characters are accepted, 0 and 51 are 400s, null is a 400 on create', async (t) => {
  const app = await buildTestApp(t)
  assert.equal((await createPlant(app, { name: 'a', tag: 't' })).plant.tag, 't')
  assert.equal((await createPlant(app, { name: 'a', tag: 't'.repeat(50) })).plant.tag, 't'.repeat(50))
  assertError(await app.inject(post({ name: 'a', tag: '' })), 400, 'body/tag must NOT have fewer than 1 characters')
  assertError(await app.inject(post({ name: 'a', tag: 't'.repeat(51) })), 400,
    'body/tag must NOT have more than 50 characters')
  assertError(await app.inject(post({ name: 'a', tag: null })), 400, 'body/tag must be string')
  assertError(await app.inject(post({ name: 'a', tag: 7 })), 400, 'body/tag must be string')
})

test('a plant without a tag has no tag property at all', async (t) => {
  const app = await buildTestApp(t)
  const { plant } = await createPlant(app, { name: 'a' })
  assert.equal('tag' in plant, false)
})

test('an unknown field is a 400 that names it, and nothing is created', async (t) => {
  const app = await buildTestApp(t)
  assertError(await app.inject(post({ name: 'a', colour: 'green' })), 400, "body has unknown property 'colour'")
  assertError(await app.inject(post({ name: 'a', createdAt: '2020-01-01T00:00:00.000Z' })), 400,
    "body has unknown property 'createdAt'")
  assert.deepEqual((await app.inject({ url: '/plants', headers: AUTH })).json(), [])
})

test('the body must be a JSON object', async (t) => {
  const app = await buildTestApp(t)
  for (const payload of ['[]', '"a"', '1', 'null']) {
    assertError(await app.inject(post(payload, { 'content-type': 'application/json' })), 400, 'body must be object')
  }
  assertError(await app.inject(post('{"name":', { 'content-type': 'application/json' })), 400, /not valid JSON/)
  assertError(await app.inject(post('', { 'content-type': 'application/json' })), 400, /cannot be empty/)
  assertError(await app.inject({ method: 'POST', url: '/plants', headers: AUTH }), 400, 'body must be object')
})

test('a body that is not JSON is a 415 (merge patches are for PATCH only)', async (t) => {
  const app = await buildTestApp(t)
  assertError(await app.inject(post('name=a', { 'content-type': 'application/x-www-form-urlencoded' })), 415,
    'Unsupported Media Type')
  assertError(await app.inject(post('a', { 'content-type': 'text/plain' })), 415, 'Unsupported Media Type')
  assertError(await app.inject(post('{"name":"a"}', { 'content-type': 'application/merge-patch+json' })), 415,
    'Unsupported Media Type')
})

test('a body over the size limit is a 413', async (t) => {
  const app = await buildTestApp(t)
  const payload = JSON.stringify({ name: 'a', tag: 'x'.repeat(1024 * 1024) })
  assertError(await app.inject(post(payload, { 'content-type': 'application/json' })), 413, 'Request body is too large')
})

test('a chosen id is used: 201 with Location /plants/{id}', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.inject(post({ id: 42, name: 'a' }))
  assert.equal(res.statusCode, 201)
  assert.equal(res.headers.location, '/plants/42')
  assert.equal(res.json().id, 42)
  // The server's own ids are not pushed up by a chosen one (test/plugins/plants/ids.test.ts).
  const next = await createPlant(app, { name: 'b' })
  assert.equal(next.plant.id, 1)
})

test('an id must be a positive integer', async (t) => {
  const app = await buildTestApp(t)
  assertError(await app.inject(post({ id: 0, name: 'a' })), 400, 'body/id must be >= 1')
  assertError(await app.inject(post({ id: -1, name: 'a' })), 400, 'body/id must be >= 1')
  assertError(await app.inject(post({ id: 1.5, name: 'a' })), 400, INEXACT_ID)
  assertError(await app.inject(post({ id: '5', name: 'a' })), 400, 'body/id must be integer')
  assertError(await app.inject(post({ id: true, name: 'a' })), 400, 'body/id must be integer')
  assertError(await app.inject(post({ id: null, name: 'a' })), 400, 'body/id must be integer')
})

test('an id beyond 2^53 - 1 is refused with a 400, never rounded; 2^53 - 1 itself is exact', async (t) => {
  const app = await buildTestApp(t)
  for (const id of ['9007199254740992', '9007199254740993', '9223372036854775807']) {
    const res = await app.inject(post(`{"id":${id},"name":"a"}`, { 'content-type': 'application/json' }))
    assertError(res, 400, 'body/id must be <= 9007199254740991')
  }
  assert.deepEqual((await app.inject({ url: '/plants', headers: AUTH })).json(), [])
  const res = await app.inject(post('{"id":9007199254740991,"name":"a"}', { 'content-type': 'application/json' }))
  assert.equal(res.statusCode, 201)
  assert.equal(res.headers.location, '/plants/9007199254740991')
  assert.match(res.body, /^\{"id":9007199254740991,/)
})

test('an id written with a fraction or an exponent is a 400, never rounded onto another id', async (t) => {
  const app = await buildTestApp(t)
  const { plant } = await createPlant(app, { id: 9007199254740991, name: 'taken' })
  for (const id of ['1.0', '1e3', '1E3', '1e+3', '10e-1', '-1.5', '9007199254740991.4', '9007199254740990.9', '1e300',
    '0.0']) {
    assertError(await app.inject(post(`{"name":"a", "id" : ${id}}`, { 'content-type': 'application/json' })), 400,
      INEXACT_ID)
  }
  // A \u escape spells the same member name.
  assertError(await app.inject(post('{"\\u0069d":1e3,"name":"a"}', { 'content-type': 'application/json' })), 400,
    INEXACT_ID)
  assert.deepEqual((await app.inject({ url: '/plants', headers: AUTH })).json(), [plant])
  // The same digits without fraction or exponent are an id; a fraction elsewhere is not an id's business.
  const res = await app.inject(post('{"id":1000,"name":"1.5e3"}', { 'content-type': 'application/json' }))
  assert.equal(res.statusCode, 201, res.body)
  assert.equal(res.headers.location, '/plants/1000')
})

test('a member named twice is a 400 naming it (I-JSON), and nothing is created', async (t) => {
  const app = await buildTestApp(t)
  const json = { 'content-type': 'application/json' }
  const twice = (name: string,
    where = 'body') => `${where} has the member "${name}" more than once: member names must be ` +
      'unique (I-JSON, RFC 7493)'
  assertError(await app.inject(post('{"name":"a","name":"b"}', json)), 400, twice('name'))
  assertError(await app.inject(post('{"name":"a","tag":"x:y","tag":"x"}', json)), 400, twice('tag'))
  assertError(await app.inject(post('{"id":5,"name":"a","id":5}', json)), 400, twice('id'))
  // Spelled differently, the same name; and at any depth (refused before the schema would say anything).
  assertError(await app.inject(post('{"name":"a","n\\u0061me":"b"}', json)), 400, twice('name'))
  assertError(await app.inject(post('{"name":"a","extra":[1,{"k":1,"k":2}]}', json)), 400, twice('k', 'body/extra/1'))
  assert.deepEqual((await app.inject({ url: '/plants', headers: AUTH })).json(), [])
  // Distinct names are fine, colons in names and values included.
  const res = await app.inject(post('{"name":"a:b","tag":"c:d"}', json))
  assert.equal(res.statusCode, 201, res.body)
})
