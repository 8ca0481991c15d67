import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { buildTestApp, TOKEN } from '../../helpers/app.js'

const CANONICAL = `Bearer ${TOKEN}`

/** Every spelling of the header that RFC 9110 lets a client send: scheme in any case, white space around the token. */
const acceptedHeader = fc.record({
  scheme: fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEaReR'),
  before: fc.stringMatching(/^[ \t]{0,3}$/),
  after: fc.stringMatching(/^[ \t]{0,3}$/)
}).map(({ scheme, before, after }) => `${scheme} ${before}${TOKEN}${after}`)

test('every Authorization header auth accepts counts in the canonical form\'s rate-limit bucket', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_MAX: '10000', RATE_LIMIT_WINDOW: '600000' })
  const remaining = async (authorization: string): Promise<number> => {
    const res = await app.inject({ url: '/plants', headers: { authorization } })
    assert.equal(res.statusCode, 200, `auth accepts ${JSON.stringify(authorization)}`)
    return Number(res.headers['ratelimit-remaining'])
  }
  let last = await remaining(CANONICAL)
  await fc.assert(fc.asyncProperty(acceptedHeader, async (authorization) => {
    // One bucket: each accepted spelling takes the next request of the same count.
    const now = await remaining(authorization)
    assert.equal(now, last - 1, JSON.stringify(authorization))
    last = now
  }), { numRuns: 60 })
  assert.equal(await remaining(CANONICAL), last - 1)
})

test('a header auth refuses counts per IP, never in the token\'s bucket', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_MAX: '10000', RATE_LIMIT_WINDOW: '600000' })
  const before = Number(
    (await app.inject({ url: '/plants', headers: { authorization: CANONICAL } })).headers['ratelimit-remaining'])
  for (const authorization of [`Bearer\t${TOKEN}`, `Bearer${TOKEN}`, `Basic ${TOKEN}`, `Bearer ${TOKEN}x`]) {
    const res = await app.inject({ url: '/plants', headers: { authorization } })
    assert.equal(res.statusCode, 401, JSON.stringify(authorization))
  }
  const after = Number(
    (await app.inject({ url: '/plants', headers: { authorization: CANONICAL } })).headers['ratelimit-remaining'])
  assert.equal(after, before - 1, 'the four refused requests did not count against the token')
})

test('every Authorization header auth accepts shares the canonical form\'s idempotency scope', async (t) => {
  const app = await buildTestApp(t)
  const body = { name: 'Scoped' }
  const first = await app.inject({
    method: 'POST',
    url: '/plants',
    headers: { authorization: CANONICAL, 'idempotency-key': 'one-key' },
    payload: body
  })
  assert.equal(first.statusCode, 201)
  await fc.assert(fc.asyncProperty(acceptedHeader, async (authorization) => {
    const replay = await app.inject({
      method: 'POST',
      url: '/plants',
      headers: { authorization, 'idempotency-key': 'one-key' },
      payload: body
    })
    assert.equal(replay.statusCode, 201, JSON.stringify(authorization))
    assert.equal(replay.headers['idempotent-replayed'], 'true', JSON.stringify(authorization))
    assert.deepEqual(replay.json(), first.json())
  }), { numRuns: 40 })
  assert.equal((await app.inject({ url: '/plants', headers: { authorization: CANONICAL } })).json<unknown[]>().length,
    1)
})
