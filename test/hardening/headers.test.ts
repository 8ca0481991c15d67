import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../helpers/app.js'

// Helmet's defaults that only mean something on an HTML document.
const DOCUMENT_ONLY = ['cross-origin-opener-policy', 'origin-agent-cluster', 'x-dns-prefetch-control',
  'x-download-options',
  'x-permitted-cross-domain-policies', 'x-xss-protection']

test("API responses carry a JSON API's security headers, a content security policy that allows nothing, and none " +
  'of the HTML-only ones', async (t) => {
  const app = await buildTestApp(t)
  for (const request of [
    { method: 'GET', url: '/health' },
    { method: 'DELETE', url: '/plants/1', headers: AUTH },
    { method: 'GET', url: '/plants/1' },
    { method: 'GET', url: '/nowhere' },
    { method: 'GET', url: '/openapi.json' }
  ] as const) {
    const res = await app.inject(request)
    const name = `${request.method} ${request.url}`
    assert.equal(res.headers['content-security-policy'], "default-src 'none';frame-ancestors 'none'", name)
    assert.equal(res.headers['x-content-type-options'], 'nosniff', name)
    assert.equal(res.headers['x-frame-options'], 'DENY', name)
    assert.equal(res.headers['referrer-policy'], 'no-referrer', name)
    assert.equal(res.headers['cross-origin-resource-policy'], 'same-origin', name)
    assert.equal(res.headers['strict-transport-security'], 'max-age=31536000; includeSubDomains', name)
    for (const header of DOCUMENT_ONLY) assert.equal(res.headers[header], undefined, `${name}: ${header}`)
  }
})

test("Swagger UI's pages, scripts and styles carry an HTML document's security headers too", async (t) => {
  const app = await buildTestApp(t)
  const page = await app.inject({ method: 'GET', url: '/docs/' })
  const script = await app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' })
  for (const res of [page, script]) {
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['cross-origin-opener-policy'], 'same-origin')
    assert.equal(res.headers['origin-agent-cluster'], '?1')
    assert.equal(res.headers['x-dns-prefetch-control'], 'off')
    assert.equal(res.headers['x-download-options'], 'noopen')
    assert.equal(res.headers['x-permitted-cross-domain-policies'], 'none')
    assert.equal(res.headers['x-xss-protection'], '0')
    // Framing as its policy says (frame-ancestors 'self'), the rest as on the API.
    assert.match(String(res.headers['content-security-policy']), /frame-ancestors 'self'/)
    assert.equal(res.headers['x-frame-options'], 'SAMEORIGIN')
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    assert.equal(res.headers['strict-transport-security'], 'max-age=31536000; includeSubDomains')
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
    method: 'OPTIONS',
    url: '/plants/1',
    headers: {
      origin: 'https://app.example',
      'access-control-request-method': 'DELETE'
    }
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
    headers: {
      origin: 'https://app.example',
      'access-control-request-method': 'DELETE',
      'access-control-request-headers': 'authorization, if-match'
    }
  })
  assert.equal(preflight.statusCode, 204)
  assert.equal(preflight.headers['access-control-allow-origin'], 'https://app.example')
  assert.match(String(preflight.headers['access-control-allow-methods']), /DELETE/)
  assert.match(String(preflight.headers['access-control-allow-headers']), /Authorization/)

  const other = await app.inject({
    method: 'OPTIONS',
    url: '/plants/1',
    headers: { origin: 'https://evil.example', 'access-control-request-method': 'DELETE' }
  })
  assert.notEqual(other.statusCode, 401)
  assert.equal(other.headers['access-control-allow-origin'], undefined)

  // A bare OPTIONS (not a preflight) is not a 401 either, nor outside the Error shape.
  const bare = await app.inject({ method: 'OPTIONS', url: '/plants/1' })
  assert.notEqual(bare.statusCode, 401)

  const actual = await app.inject({
    method: 'DELETE',
    url: '/plants/1',
    headers: { ...AUTH, origin: 'https://admin.example' }
  })
  assert.equal(actual.statusCode, 404)
  assert.equal(actual.headers['access-control-allow-origin'], 'https://admin.example')
})
