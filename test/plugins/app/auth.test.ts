import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { buildTestApp, TOKEN } from '../../helpers/app.js'

async function deleteWith (app: Awaited<ReturnType<typeof buildTestApp>>, authorization?: string) {
  return app.inject({
    method: 'DELETE',
    url: '/plants/1',
    headers: authorization === undefined ? {} : { authorization }
  })
}

test('no Authorization header: 401 in the Error shape with WWW-Authenticate: Bearer', async (t) => {
  const app = await buildTestApp(t)
  const res = await deleteWith(app)
  assert.equal(res.statusCode, 401)
  assert.equal(res.headers['www-authenticate'], 'Bearer')
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  assert.deepEqual(res.json(), { error: 401, message: 'missing authorization header' })
})

test('a wrong token, another scheme or an empty token: 401 with WWW-Authenticate: Bearer', async (t) => {
  const app = await buildTestApp(t)
  for (const authorization of [`Bearer ${TOKEN}x`, 'Bearer wrong', `Basic ${TOKEN}`, 'Bearer', 'Bearer ', TOKEN, '']) {
    const res = await deleteWith(app, authorization)
    assert.equal(res.statusCode, 401, authorization)
    assert.equal(res.headers['www-authenticate'], 'Bearer')
    const body = res.json()
    assert.equal(body.error, 401)
    assert.match(body.message, /^(invalid|missing) authorization header$/)
    assert.deepEqual(Object.keys(body), ['error', 'message'])
  }
})

test('the scheme name is case-insensitive (RFC 9110)', async (t) => {
  const app = await buildTestApp(t)
  for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
    const res = await deleteWith(app, `${scheme} ${TOKEN}`)
    assert.equal(res.statusCode, 404, scheme)
  }
})

test('the auth check runs before validation: an invalid id without a token is 401, not 400', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.inject({ method: 'DELETE', url: '/plants/abc' })
  assert.equal(res.statusCode, 401)
})

test('every token from API_TOKENS and API_TOKENS_FILE is accepted, others are not', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-auth-'))
  const file = join(dir, 'tokens')
  writeFileSync(file, 'file-token-a-0123456789abcdef0123456789\n\nfile-token-b-0123456789abcdef0123456789\n')
  const app = await buildTestApp(t, {
    API_TOKENS: 'env-token-0123456789abcdef0123456789, second-env-token-0123456789abcdef01',
    API_TOKENS_FILE: file
  })
  for (const token of ['env-token-0123456789abcdef0123456789', 'second-env-token-0123456789abcdef01',
    'file-token-a-0123456789abcdef0123456789', 'file-token-b-0123456789abcdef0123456789']) {
    assert.equal((await deleteWith(app, `Bearer ${token}`)).statusCode, 404, token)
  }
  assert.equal((await deleteWith(app, `Bearer ${TOKEN}`)).statusCode, 401)
})

test('docs, the OpenAPI document and health need no token', async (t) => {
  const app = await buildTestApp(t)
  for (const url of ['/health', '/openapi.json', '/docs', '/docs/json']) {
    const res = await app.inject({ method: 'GET', url })
    assert.equal(res.statusCode, 200, url)
  }
})
