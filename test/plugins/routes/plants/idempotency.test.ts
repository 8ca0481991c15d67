import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AUTH, buildTestApp, TOKEN } from '../../../helpers/app.js'
import { assertError, type PlantBody } from '../../../helpers/plants.js'
import { IDEMPOTENCY_TTL_MS } from '../../../../src/store/rules.js'

const OTHER_TOKEN = 'other-token-abcdefghijklmnopqrstuvwxyz'

const create = (app: FastifyInstance, payload: Record<string, unknown> | string, key?: string,
  authorization: string = AUTH.authorization) =>
  app.inject({
    method: 'POST',
    url: '/plants',
    headers: {
      authorization,
      'content-type': 'application/json',
      ...(key !== undefined && { 'idempotency-key': key })
    },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload)
  })

const listAll = async (app: FastifyInstance) => (await app.inject(
  { url: '/plants?limit=100', headers: AUTH })).json<PlantBody[]>()

test('a retry with the same key and body answers the first 201 again and creates nothing', async (t) => {
  const app = await buildTestApp(t)
  const first = await create(app, { name: 'Fern', tag: 'green' }, 'key-1')
  assert.equal(first.statusCode, 201)
  assert.equal(first.headers['idempotent-replayed'], undefined)
  const retry = await create(app, { name: 'Fern', tag: 'green' }, 'key-1')
  assert.equal(retry.statusCode, 201)
  assert.equal(retry.headers['idempotent-replayed'], 'true')
  assert.equal(retry.body, first.body)
  assert.equal(retry.headers.location, first.headers.location)
  assert.equal(retry.headers.etag, first.headers.etag)
  assert.equal(retry.headers['content-type'], first.headers['content-type'])
  assert.equal((await listAll(app)).length, 1)
})

test('the replay is the first answer, even after the plant has changed or gone', async (t) => {
  const app = await buildTestApp(t)
  const first = await create(app, { id: 12, name: 'Fern' }, 'key-1')
  await app.inject({ method: 'PATCH', url: '/plants/12', headers: AUTH, payload: { name: 'Changed' } })
  assert.equal((await create(app, { id: 12, name: 'Fern' }, 'key-1')).body, first.body)
  await app.inject({ method: 'DELETE', url: '/plants/12', headers: AUTH })
  const retry = await create(app, { id: 12, name: 'Fern' }, 'key-1')
  assert.equal(retry.statusCode, 201)
  assert.equal(retry.body, first.body)
  assert.equal(retry.headers.location, '/plants/12')
  assert.deepEqual(await listAll(app), [])
})

test('bodies that create the same plant are the same request: key order and surrounding ' +
  'white space do not matter', async (t) => {
  const app = await buildTestApp(t)
  const first = await create(app, '{"name":"Fern","tag":"green"}', 'key-1')
  const retry = await create(app, '{ "tag": "green", "name": "  Fern " }', 'key-1')
  assert.equal(retry.statusCode, 201)
  assert.equal(retry.headers['idempotent-replayed'], 'true')
  assert.equal(retry.body, first.body)
})

test('the same key with another body is a 422 and creates nothing', async (t) => {
  const app = await buildTestApp(t)
  await create(app, { name: 'Fern' }, 'key-1')
  for (const body of [{ name: 'Rose' }, { name: 'Fern', tag: 'x' }, { name: 'Fern', id: 5 }]) {
    assertError(await create(app, body, 'key-1'), 422,
      'This Idempotency-Key was already used with a different request body')
  }
  assert.equal((await listAll(app)).length, 1)
})

test('keys belong to a token: the same key under another token is another request', async (t) => {
  const app = await buildTestApp(t, { API_TOKENS: `${TOKEN},${OTHER_TOKEN}` })
  const mine = await create(app, { name: 'Fern' }, 'shared-key')
  const theirs = await create(app, { name: 'Fern' }, 'shared-key', `Bearer ${OTHER_TOKEN}`)
  assert.equal(theirs.statusCode, 201)
  assert.equal(theirs.headers['idempotent-replayed'], undefined)
  assert.notEqual(theirs.headers.location, mine.headers.location)
  // And another body under the other token is not a 422 either.
  assert.equal((await create(app, { name: 'Rose' }, 'shared-key-2', `Bearer ${OTHER_TOKEN}`)).statusCode, 201)
  assert.equal((await create(app, { name: 'Lily' }, 'shared-key-2')).statusCode, 201)
  assert.equal((await listAll(app)).length, 4)
})

test('the store gets a hash of the token as the scope, never the token, and a hash of the body', async (t) => {
  const app = await buildTestApp(t)
  const spy = t.mock.method(app.store.plants, 'create')
  await create(app, { name: 'Fern' }, 'key-1')
  const idempotency = spy.mock.calls[0]?.arguments[1]
  assert.ok(idempotency)
  assert.equal(idempotency.scope, createHash('sha256').update(TOKEN).digest('hex'))
  assert.equal(idempotency.key, 'key-1')
  assert.match(idempotency.fingerprint, /^[0-9a-f]{64}$/)
  assert.equal(JSON.stringify(idempotency).includes(TOKEN), false)
  // Without a key, no idempotency at all: two POSTs are two plants.
  await create(app, { name: 'Fern' })
  assert.equal(spy.mock.calls[1]?.arguments[1], undefined)
  await create(app, { name: 'Fern' })
  assert.equal((await listAll(app)).length, 3)
})

test('keys expire after 24 hours: then the same key creates again', async (t) => {
  const app = await buildTestApp(t)
  let now = Date.parse('2026-03-01T12:00:00.000Z')
  t.mock.method(Date, 'now', () => now)
  const first = await create(app, { name: 'Fern' }, 'key-1')
  assert.equal(first.statusCode, 201)
  now += IDEMPOTENCY_TTL_MS - 1
  const stillRemembered = await create(app, { name: 'Fern' }, 'key-1')
  assert.equal(stillRemembered.headers['idempotent-replayed'], 'true')
  assert.equal(stillRemembered.body, first.body)
  assertError(await create(app, { name: 'Rose' }, 'key-1'), 422, /already used/)
  now += 1
  const expired = await create(app, { name: 'Rose' }, 'key-1')
  assert.equal(expired.statusCode, 201)
  assert.equal(expired.headers['idempotent-replayed'], undefined)
  assert.equal(expired.json().name, 'Rose')
  assert.notEqual(expired.headers.location, first.headers.location)
  // The key now stands for the new create.
  assert.equal((await create(app, { name: 'Rose' }, 'key-1')).body, expired.body)
  assert.equal((await listAll(app)).length, 2)
})

test('a failed create is not remembered: a 409 retried is a 409 again, then a 201 once the id is free', async (t) => {
  const app = await buildTestApp(t)
  await create(app, { id: 3, name: 'Taken' })
  assertError(await create(app, { id: 3, name: 'Fern' }, 'key-1'), 409, 'Plant 3 already exists')
  assertError(await create(app, { id: 3, name: 'Fern' }, 'key-1'), 409, 'Plant 3 already exists')
  await app.inject({ method: 'DELETE', url: '/plants/3', headers: AUTH })
  // Ids are never reused by the store, but a client may still choose a freed one.
  const res = await create(app, { id: 3, name: 'Fern' }, 'key-1')
  assert.equal(res.statusCode, 201)
  assert.equal(res.headers['idempotent-replayed'], undefined)
})

test('the key must be 1 to 255 visible ASCII characters', async (t) => {
  const app = await buildTestApp(t)
  assert.equal((await create(app, { name: 'a' }, 'k'.repeat(255))).statusCode, 201)
  assert.equal((await create(app, { name: 'a' }, '!~"#$%&\'()*+,-./0123456789:;<=>?@[\\]^_`{|}')).statusCode, 201)
  assertError(await create(app, { name: 'a' }, ''), 400,
    'headers/idempotency-key must NOT have fewer than 1 characters')
  assertError(await create(app, { name: 'a' }, 'k'.repeat(256)), 400,
    'headers/idempotency-key must NOT have more than 255 characters')
  for (const key of ['a b', 'a\tb', 'caf\u00e9']) {
    assertError(await create(app, { name: 'a' }, key), 400,
      'headers/idempotency-key must be visible ASCII characters only (no spaces)')
  }
  assert.equal((await listAll(app)).length, 2)
})
