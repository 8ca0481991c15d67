import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { SignJWT, type JWTPayload } from 'jose'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, captureLog } from '../../helpers/app.js'
import {
  AUDIENCE, forge, signingKey, startProvider, type SigningKey,
  type TestProvider
} from '../../helpers/oidc-provider.js'
import { EXPECTED_SCOPES, PLANTS_READ, PLANTS_WRITE } from '../../helpers/resources.js'
import { assertScopeMatrix } from '../../helpers/scoped-tokens.js'
import type { Cleanup } from '../../helpers/cleanup.js'

const INVALID = 'Bearer error="invalid_token"'

async function provider (t: Cleanup, keys?: SigningKey[]): Promise<{ provider: TestProvider, key: SigningKey }> {
  const key = keys?.[0] ?? await signingKey('key-1')
  const started = await startProvider(keys ?? [key])
  t.after(started.stop)
  return { provider: started, key }
}

const oidcEnv = (provider: TestProvider, env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv =>
  ({ API_TOKENS: undefined, OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: AUDIENCE, ...env })

const b64 = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url')

async function read (app: FastifyInstance, token: string) {
  return await app.inject({ url: '/plants', headers: { authorization: `Bearer ${token}` } })
}

function assertInvalid (res: Awaited<ReturnType<typeof read>>, check: string, token: string): void {
  assert.equal(res.statusCode, 401, check)
  assert.equal(res.headers['www-authenticate'], INVALID, check)
  assert.deepEqual(res.json(), { error: 401, message: `Invalid token: ${check}` })
  assert.ok(!res.body.includes(token.split('.')[1] ?? token), 'the token is never echoed')
}

test('scope matrix, JWT access tokens from a real provider: each client\'s scopes, every operation', async (t) => {
  const { provider: op } = await provider(t)
  const app = await buildTestApp(t, oidcEnv(op))
  await assertScopeMatrix(app, [
    { label: 'reader', scopes: [PLANTS_READ], authorization: `Bearer ${await op.token('reader')}` },
    { label: 'writer', scopes: [PLANTS_WRITE], authorization: `Bearer ${await op.token('writer')}` },
    { label: 'integrator', scopes: ['webhooks', PLANTS_READ], authorization: `Bearer ${await op.token('integrator')}` },
    // Every scope there is.
    {
      label: 'admin',
      scopes: EXPECTED_SCOPES.map(({ scope }) => scope),
      authorization: `Bearer ${await op.token('admin')}`
    },
    // A token with fewer scopes than its client may have.
    {
      label: `admin asking ${PLANTS_READ} only`,
      scopes: [PLANTS_READ],
      authorization: `Bearer ${await op.token('admin', PLANTS_READ)}`
    },
    {
      label: 'admin asking webhooks only',
      scopes: ['webhooks'],
      authorization: `Bearer ${await op.token('admin', 'webhooks')}`
    }
  ])
  // Discovery and the key set were fetched once for all of it.
  assert.equal(op.jwksRequests(), 1)
})

test('a JWT caller is its subject: in the access log with its client, owning its webhooks; ' +
  'opaque tokens work beside it', async (t) => {
  const { provider: op } = await provider(t)
  const log = captureLog()
  const app = await buildTestApp(t,
    {
      ...oidcEnv(op),
      API_TOKENS: 'opaque-token-0123456789abcdef0123456789',
      LOG_LEVEL: 'info',
      WEBHOOK_ALLOW_PRIVATE_URLS: '0'
    }, { logStream: log.stream })
  const token = await op.token('integrator')
  const created = await app.inject({
    method: 'POST',
    url: '/webhooks',
    headers: { authorization: `Bearer ${token}` },
    payload: { url: 'https://93.184.216.34/hooks' }
  })
  assert.equal(created.statusCode, 201)
  const id = created.json<{ id: number }>().id
  assert.equal(
    (await app.inject(
      { url: `/webhooks/${id}`, headers: { authorization: `Bearer ${await op.token('admin')}` } })).statusCode, 404,
    'another subject')
  assert.equal(
    (await app.inject(
      { url: `/webhooks/${id}`, headers: { authorization: `Bearer ${await op.token('integrator')}` } })).statusCode,
    200, 'a new token, the same subject')
  assert.equal(
    (await app.inject(
      { url: '/plants', headers: { authorization: 'Bearer opaque-token-0123456789abcdef0123456789' } })).statusCode,
    200)
  const lines = log.text().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).filter(
    (line) => line.msg === 'request completed')
  assert.deepEqual(lines.slice(0, 3).map(({ principal, client, statusCode }) => ({ principal, client, statusCode })), [
    { principal: 'integrator', client: 'integrator', statusCode: 201 },
    { principal: 'admin', client: 'admin', statusCode: 404 },
    { principal: 'integrator', client: 'integrator', statusCode: 200 }
  ])
  assert.ok(!log.text().includes(token))
})

test('every refusal is a 401 with error="invalid_token" and a message naming the failed check, ' +
  'never the token', async (t) => {
  const key = await signingKey('key-1')
  const { provider: op } = await provider(t, [key])
  const app = await buildTestApp(t, oidcEnv(op))
  const now = Math.floor(Date.now() / 1000)
  const stranger = await signingKey('key-1')
  const hmacSecret = new TextEncoder().encode(JSON.stringify({ ...key.privateJwk, d: undefined }))
  const hs256 = await new SignJWT({ sub: 'x', iss: op.issuer, aud: AUDIENCE, exp: now + 300, scope: PLANTS_READ })
    .setProtectedHeader({ alg: 'HS256', kid: key.kid }).sign(hmacSecret)
  const none = `${b64({ alg: 'none', kid: key.kid })}.` +
    `${b64({ sub: 'x', iss: op.issuer, aud: AUDIENCE, exp: now + 300, scope: PLANTS_READ })}.`
  const cases: Array<[string, string]> = [
    [none, 'its algorithm is not accepted (only RS256, PS256, ES256, EdDSA)'],
    [hs256, 'its algorithm is not accepted (only RS256, PS256, ES256, EdDSA)'],
    [await forge(key, op, { iss: 'https://elsewhere.example' }), 'it was issued by another issuer (iss)'],
    [await forge(key, op, { aud: 'https://other-api.example' }), 'it is meant for another audience (aud)'],
    [await forge(key, op, { exp: now - 60 }), 'it has expired (exp)'],
    [await forge(key, op, { nbf: now + 60 }), 'it is not valid yet (nbf)'],
    [await forge(key, op, { exp: undefined } as unknown as JWTPayload), 'it has no expiry (exp)'],
    [await forge(stranger, op), 'its signature does not verify'],
    [await forge(key, op, { sub: undefined } as unknown as JWTPayload), 'it has no subject (sub)'],
    [await forge(key, op, { iat: now + 3600 }), 'it was issued in the future (iat)'],
    [await forge(key, op, { iat: 'soon' } as unknown as JWTPayload),
      'its iat claim is not a number of seconds (NumericDate)'],
    [await forge(key, op, { nbf: String(now) } as unknown as JWTPayload),
      'its nbf claim is not a number of seconds (NumericDate)'],
    [await forge(key, op, {}, { typ: 'JWT' }), 'it is not an access token (its typ header is not at+jwt, RFC 9068)'],
    [await forge(key, op, {}, { typ: undefined }),
      'it is not an access token (its typ header is not at+jwt, RFC 9068)'],
    ['bm90IGpzb24.e30.c2ln', 'it is not a well-formed signed JWT']
  ]
  // An unknown kid is settled by the fetch it starts (a fresh app's first request): the set lacks it.
  const unknownKid = await forge(key, op, {}, { kid: 'unknown-kid' })
  assertInvalid(await read(await buildTestApp(t, oidcEnv(op)), unknownKid),
    'no key of the provider\'s key set matches it (kid)', unknownKid)
  for (const [token, check] of cases) assertInvalid(await read(app, token), check, token)
  // Within the clock skew (30 s by default), a just-expired or almost-valid token is still accepted.
  assert.equal((await read(app, await forge(key, op, { exp: now - 10 }))).statusCode, 200)
  assert.equal((await read(app, await forge(key, op, { nbf: now + 10 }))).statusCode, 200)
  assert.equal((await read(app, await forge(key, op, { iat: now + 10 }))).statusCode, 200)
  assert.equal((await read(app, await forge(key, op, {}, { typ: 'application/at+jwt' }))).statusCode, 200,
    'RFC 9068: the media type form')
  // OIDC_REQUIRE_AT_JWT=0: a provider's plain JWT access tokens pass; every other check still holds.
  const relaxed = await buildTestApp(t, oidcEnv(op, { OIDC_REQUIRE_AT_JWT: '0' }))
  assert.equal((await read(relaxed, await forge(key, op, {}, { typ: 'JWT' }))).statusCode, 200)
  const future = await forge(key, op, { iat: now + 3600 }, { typ: 'JWT' })
  assertInvalid(await read(relaxed, future), 'it was issued in the future (iat)', future)
  // Scopes also come as an `scp` array.
  const scp = await forge(key, op, { scope: undefined, scp: ['webhooks', 'unknown'] })
  assert.equal((await read(app, scp)).statusCode, 403)
  assert.equal((await app.inject({ url: '/webhooks', headers: { authorization: `Bearer ${scp}` } })).statusCode, 200)
  // Without OIDC_ISSUER a JWT is just an unknown token.
  const plain = await buildTestApp(t)
  const res = await read(plain, await op.token('reader'))
  assert.equal(res.statusCode, 401)
  assert.equal(res.headers['www-authenticate'], 'Bearer')
})

test('key rotation at the provider while the service runs: a token with the new kid makes the ' +
  'service fetch the key set again', async (t) => {
  const old = await signingKey('key-old')
  const { provider: op } = await provider(t, [old])
  const app = await buildTestApp(t, oidcEnv(op, { OIDC_JWKS_COOLDOWN_MS: '0' }))
  const before = await op.token('reader')
  assert.equal((await read(app, before)).statusCode, 200)
  assert.equal(op.jwksRequests(), 1)

  const rotated = await signingKey('key-new', 'RS256')
  await op.restart([rotated, old])
  const after = await op.token('reader')
  assert.equal((await read(app, after)).statusCode, 200)
  assert.equal(op.jwksRequests(), 2, 'one fetch for the unknown kid')
  assert.equal((await read(app, before)).statusCode, 200, 'the old key is still published: its tokens still verify')
  assert.equal(op.jwksRequests(), 2)
})

test('the provider down: cached keys keep verifying; without a fitting cached key, 503 with ' +
  'Retry-After in the Error shape', async (t) => {
  const key = await signingKey('key-1')
  const { provider: op } = await provider(t, [key])
  const warm = await buildTestApp(t, oidcEnv(op, { OIDC_JWKS_COOLDOWN_MS: '0' }))
  const cold = await buildTestApp(t, oidcEnv(op))
  const cooling = await buildTestApp(t, oidcEnv(op))
  const token = await op.token('reader')
  assert.equal((await read(warm, token)).statusCode, 200)
  assert.equal((await read(cooling, token)).statusCode, 200)
  await op.stop()

  // Within the cooldown of its successful fetch: an unknown kid cannot be settled, so 503 and when it can be.
  const unknown = await read(cooling, await forge(await signingKey('key-3'), op))
  assert.equal(unknown.statusCode, 503, unknown.body)
  assert.match(String(unknown.headers['retry-after']), /^[1-9]\d*$/)
  assert.ok(Number(unknown.headers['retry-after']) <= 30)
  assert.deepEqual(unknown.json(), {
    error: 503,
    message: 'The identity provider\'s signing keys cannot be fetched, retry shortly'
  })

  assert.equal((await read(warm, token)).statusCode, 200, 'the cached key fits')
  // Retry-After is when the next fetch may start: 5 s after a failed one (OIDC_JWKS_COOLDOWN_MS 30 s), or the
  // shorter cooldown.
  for (const [app, probe, retryAfter] of [[cold, token, '5'],
    [warm, await forge(await signingKey('key-2'), op), '1']] as const) {
    const res = await read(app, probe)
    assert.equal(res.statusCode, 503)
    assert.equal(res.headers['retry-after'], retryAfter)
    assert.equal(res.headers['www-authenticate'], undefined)
    assert.deepEqual(res.json(), {
      error: 503,
      message: 'The identity provider\'s signing keys cannot be fetched, retry shortly'
    })
  }
  // The provider back: a client that waits what Retry-After said is served by the cold instance.
  await op.restart([key])
  await new Promise((resolve) => setTimeout(resolve, 5000))
  assert.equal((await read(cold, token)).statusCode, 200)
})

test('a key replaced at the provider under the same kid: a signature that fails under the ' +
  'cached kid refetches the key set', async (t) => {
  const old = await signingKey('key-1')
  const { provider: op } = await provider(t, [old])
  const app = await buildTestApp(t, oidcEnv(op, { OIDC_JWKS_COOLDOWN_MS: '0' }))
  const before = await op.token('reader')
  assert.equal((await read(app, before)).statusCode, 200)
  assert.equal(op.jwksRequests(), 1)

  await op.restart([await signingKey('key-1')])
  assert.equal((await read(app, await op.token('reader'))).statusCode, 200, 'the new key under the old kid')
  assert.equal(op.jwksRequests(), 2, 'one fetch for the failed signature')
  const replaced = await forge(old, op)
  assertInvalid(await read(app, replaced), 'its signature does not verify', replaced)
  assert.equal(op.jwksRequests(), 3, 'the replaced key is gone after one more fetch')
})

test('a flood of unknown kids costs the provider one key-set request per cooldown, not one per token', async (t) => {
  const key = await signingKey('key-1')
  const { provider: op } = await provider(t, [key])
  const app = await buildTestApp(t, oidcEnv(op, { OIDC_JWKS_COOLDOWN_MS: '600000' }))
  assert.equal((await read(app, await op.token('reader'))).statusCode, 200)
  assert.equal(op.jwksRequests(), 1)
  const flood = await Promise.all(
    Array.from({ length: 50 }, async () => await forge(key, op, {}, { kid: randomBytes(8).toString('hex') })))
  // Within the cooldown the set cannot be fetched to settle them: 503, Retry-After the cooldown left.
  const answers = await Promise.all(flood.map(async (token) => {
    const res = await read(app, token)
    return `${res.statusCode} ${/^[1-9]\d*$/.test(String(res.headers['retry-after'])) &&
      Number(res.headers['retry-after']) <= 600}`
  }))
  assert.deepEqual([...new Set(answers)], ['503 true'])
  assert.equal(op.jwksRequests(), 1, 'within the cooldown, no refetch at all')
  // Signatures that fail under the cached kid refetch within the same bound.
  const stranger = await signingKey('key-1')
  const bad = await Promise.all(Array.from({ length: 20 }, async () => await forge(stranger, op)))
  assert.deepEqual([...new Set(await Promise.all(bad.map(async (token) => (await read(app, token)).statusCode)))],
    [401])
  assert.equal(op.jwksRequests(), 1)

  // A fresh instance, whose first request is the flood: one fetch serves them all.
  const fresh = await buildTestApp(t, oidcEnv(op, { OIDC_JWKS_COOLDOWN_MS: '600000' }))
  // Those that joined the fetch are settled by it (401); any arriving once it is done are within its cooldown (503).
  const firsts = await Promise.all(flood.map(async (token) => (await read(fresh, token)).statusCode))
  assert.equal(firsts[0], 401)
  assert.deepEqual([...new Set(firsts)].filter((status) => status !== 401 && status !== 503), [])
  assert.equal(op.jwksRequests(), 2)
})
