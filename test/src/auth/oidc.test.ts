import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { decodeJwt, decodeProtectedHeader } from 'jose'
import { AuthUnavailableError, isServiceError } from '../../../src/lib/errors.js'
import {
  FAILED_FETCH_COOLDOWN_MS, KEYS_MAX_AGE_MS, looksLikeJwt, OidcVerifier,
  ProviderKeys
} from '../../../src/auth/oidc.js'
import { DEFAULT_SCOPES } from '../../../src/auth/scopes.js'
import { AUDIENCE, signingKey, startProvider } from '../../helpers/oidc-provider.js'
import { PLANTS_READ } from '../../helpers/resources.js'

test('looksLikeJwt: three base64url parts (the last may be empty); anything else is an opaque token', () => {
  for (const token of ['a.b.c', 'eyJh-_.e30.', 'x.y.z_-']) assert.equal(looksLikeJwt(token), true, token)
  for (const token of ['abc', 'a.b', 'a.b.c.d', 'a..c', 'a+b.c.d', 'test-token-0123456789abcdef0123456789']) {
    assert.equal(looksLikeJwt(token), false, token)
  }
})

test('ProviderKeys: one fetch per cooldown whether it succeeds or fails; stale keys refresh in ' +
  'the background and keep serving', async (t) => {
  const key = await signingKey('key-1')
  const op = await startProvider([key])
  t.after(op.stop)
  const token = await op.token('reader')
  const header = decodeProtectedHeader(token) as Parameters<ProviderKeys['getKey']>[0]
  let now = 1_000_000
  const failures: unknown[] = []
  const keys = new ProviderKeys(op.issuer, 30_000, (err) => failures.push(err), () => now)
  const unavailable = (err: unknown) => isServiceError(err, 'auth-unavailable')

  await op.stop()
  await assert.rejects(async () => await keys.getKey(header, { payload: '', signature: '' }), unavailable)
  assert.equal(failures.length, 1)
  // Within the cooldown of the failed attempt: refused at once, nothing fetched.
  await op.restart([key])
  await assert.rejects(async () => await keys.getKey(header, { payload: '', signature: '' }), unavailable)
  assert.equal(failures.length, 1)
  assert.equal(op.jwksRequests(), 0)

  now += 30_000
  assert.ok(await keys.getKey(header, { payload: '', signature: '' }))
  assert.equal(op.jwksRequests(), 1)
  // An unknown kid within the cooldown of a successful fetch, the provider down meanwhile: no fetch, a 503
  // (the set cannot be fetched to settle it) whose Retry-After is the cooldown left.
  await op.stop()
  now += 10_000
  const err: unknown = await (async () => await keys.getKey({ ...header, kid: 'other' },
    { payload: '', signature: '' }))().then(() => undefined, (caught: unknown) => caught)
  assert.ok(err instanceof AuthUnavailableError, String(err))
  assert.equal(err.retryAfterS, 20)
  assert.equal(op.jwksRequests(), 1, 'nothing asked of it')
  await op.restart([key])
  now -= 10_000

  // Stale keys: served at once while a background fetch runs; a failed one leaves them in place.
  now += KEYS_MAX_AGE_MS
  await op.stop()
  assert.ok(await keys.getKey(header, { payload: '', signature: '' }))
  while (failures.length < 2) await new Promise((resolve) => setTimeout(resolve, 10))
  // Once that attempt has failed, an unknown kid is a 503: the provider could not be asked.
  await assert.rejects(async () => await keys.getKey({ ...header, kid: 'other' }, { payload: '', signature: '' }),
    unavailable)
  assert.equal(failures.length, 2)
})

test('ProviderKeys: after a failed fetch, the 503 names the time left until the next fetch may ' +
  'start, and one starts then', async (t) => {
  const key = await signingKey('key-1')
  const op = await startProvider([key])
  t.after(op.stop)
  const header = decodeProtectedHeader(await op.token('reader')) as Parameters<ProviderKeys['getKey']>[0]
  const retryAfter = async (keys: ProviderKeys): Promise<number> => {
    const err: unknown = await (async () => await keys.getKey(header, { payload: '', signature: '' }))().then(
      () => undefined, (caught: unknown) => caught)
    assert.ok(err instanceof AuthUnavailableError, String(err))
    return err.retryAfterS
  }
  let now = 1_000_000
  const keys = new ProviderKeys(op.issuer, 30_000, () => {}, () => now)
  await op.stop()
  assert.equal(FAILED_FETCH_COOLDOWN_MS, 5000)
  assert.equal(await retryAfter(keys), 5, 'the failure cooldown, not the 30 s one')
  await op.restart([key])
  now += 4001
  assert.equal(await retryAfter(keys), 1, 'the time left, rounded up')
  assert.equal(op.jwksRequests(), 0)
  now += 999
  assert.ok(await keys.getKey(header, { payload: '', signature: '' }),
    'the provider back: served once Retry-After has passed')
  assert.equal(op.jwksRequests(), 1)
  // A cooldown shorter than 5 s is kept after a failure too.
  const quick = new ProviderKeys(op.issuer, 2000, () => {}, () => now)
  await op.stop()
  assert.equal(await retryAfter(quick), 2)
})

test('ProviderKeys: a discovery document of another issuer, or without jwks_uri, is a failure', async (t) => {
  let document: object = {}
  const server = createServer(
    (_req, res) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(document)) })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.after(() => server.close())
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const failures: Error[] = []
  const header = { alg: 'ES256', kid: 'k' }
  for (const [served, message] of [
    [{ issuer: 'https://elsewhere.example', jwks_uri: `${issuer}/jwks` },
      'the discovery document names another issuer'],
    [{ issuer }, 'the discovery document has no jwks_uri']
  ] as const) {
    document = served
    const keys = new ProviderKeys(issuer, 0, (err) => failures.push(err as Error))
    await assert.rejects(async () => await keys.getKey(header, { payload: '', signature: '' }),
      (err: unknown) => isServiceError(err, 'auth-unavailable'))
    assert.equal(failures.at(-1)?.message, message)
  }
})

test('OidcVerifier remembers a verified token until its exp (verified once), and never a refusal', async (t) => {
  const key = await signingKey('key-1')
  const op = await startProvider([key])
  t.after(op.stop)
  let now = Date.now()
  const verifier = new OidcVerifier(
    { issuer: op.issuer, audience: AUDIENCE, clockSkewMs: 30_000, jwksCooldownMs: 30_000, requireAtJwt: true },
    () => {}, DEFAULT_SCOPES.isScope, () => now)
  const token = await op.token('reader')
  const first = await verifier.verify(token)
  assert.deepEqual({ ...first, scopes: [...first.scopes] },
    { id: 'jwt:reader', name: 'reader', client: 'reader', scopes: [PLANTS_READ] })
  assert.equal(await verifier.verify(token), first, 'the same principal: not verified again')
  now = (decodeJwt(token).exp ?? 0) * 1000
  const again = await verifier.verify(token)
  assert.notEqual(again, first,
    'at its exp it is verified again (jose, on the real clock, still accepts it within the skew)')
  assert.deepEqual(again, first)
  const forged = `${token.slice(0, token.lastIndexOf('.'))}.AAAA`
  for (let i = 0; i < 2; i++) await assert.rejects(verifier.verify(forged), { code: 'invalid-token' })
})
