import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../helpers/app.js'

test('API responses carry helmet security headers and a content security policy that allows nothing', async (t) => {
  const app = await buildTestApp(t)
  for (const request of [{ method: 'GET', url: '/health' }, { method: 'DELETE', url: '/plants/1', headers: AUTH }] as const) {
    const res = await app.inject(request)
    assert.equal(res.headers['content-security-policy'], "default-src 'none';frame-ancestors 'none'")
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    assert.equal(res.headers['x-frame-options'], 'SAMEORIGIN')
    assert.equal(res.headers['referrer-policy'], 'no-referrer')
    assert.ok(res.headers['strict-transport-security'])
  }
})

test('/docs works under its policy: every script and style it loads is same-origin and served', async (t) => {
  const app = await buildTestApp(t)
  const page = await app.inject({ method: 'GET', url: '/docs/' })
  assert.equal(page.statusCode, 200)
  const csp = String(page.headers['content-security-policy'])
  assert.match(csp, /script-src 'self'(;|$)/)
  assert.match(csp, /style-src 'self'/)
  assert.doesNotMatch(csp, /upgrade-insecure-requests/)
  // No inline script (the policy would block it): only <script src> from the same origin.
  assert.doesNotMatch(page.body, /<script(?![^>]*\ssrc=)[^>]*>/)
  const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] ?? '')
  assert.ok(assets.length >= 5)
  for (const asset of assets) {
    assert.doesNotMatch(asset, /^(https?:)?\/\//, `${asset} is not same-origin`)
    const res = await app.inject({ method: 'GET', url: new URL(asset, 'http://x/docs/').pathname })
    assert.equal(res.statusCode, 200, asset)
  }
})

test('CORS is off by default: no CORS headers, and a preflight never asks for a token', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.inject({
    method: 'OPTIONS', url: '/plants/1', headers: { origin: 'https://app.example', 'access-control-request-method': 'DELETE' }
  })
  assert.notEqual(res.statusCode, 401)
  // Without CORS, OPTIONS is a method /plants/1 does not have.
  assert.equal(res.statusCode, 405)
  assert.deepEqual(Object.keys(res.json()), ['error', 'message'])
  assert.equal(res.headers['access-control-allow-origin'], undefined)
})

test('CORS_ORIGINS allows the listed origins; a preflight needs no token', async (t) => {
  const app = await buildTestApp(t, { CORS_ORIGINS: 'https://app.example, https://admin.example' })
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/plants/1',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'authorization, if-match' }
  })
  assert.equal(preflight.statusCode, 204)
  assert.equal(preflight.headers['access-control-allow-origin'], 'https://app.example')
  assert.match(String(preflight.headers['access-control-allow-methods']), /DELETE/)
  assert.match(String(preflight.headers['access-control-allow-headers']), /Authorization/)

  const other = await app.inject({ method: 'OPTIONS', url: '/plants/1', headers: { origin: 'https://evil.example', 'access-control-request-method': 'DELETE' } })
  assert.notEqual(other.statusCode, 401)
  assert.equal(other.headers['access-control-allow-origin'], undefined)

  // A bare OPTIONS (not a preflight) is not a 401 either, nor outside the Error shape.
  const bare = await app.inject({ method: 'OPTIONS', url: '/plants/1' })
  assert.notEqual(bare.statusCode, 401)

  const actual = await app.inject({ method: 'DELETE', url: '/plants/1', headers: { ...AUTH, origin: 'https://admin.example' } })
  assert.equal(actual.statusCode, 404)
  assert.equal(actual.headers['access-control-allow-origin'], 'https://admin.example')
})
