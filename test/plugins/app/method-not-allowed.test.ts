import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH, buildTestApp } from '../../helpers/app.js'
import { assertError } from '../../helpers/plants.js'

/** A known path asked with a method it lacks is a 405 with Allow; only unknown paths are 404s. */

const ONE_PLANT = 'GET, HEAD, PUT, PATCH, DELETE'

test('a method a path does not have is a 405 in the Error shape, with Allow listing the methods it ' +
  'has (HEAD where GET is)', async (t) => {
  const app = await buildTestApp(t)
  type Method = 'POST' | 'DELETE' | 'PUT' | 'PATCH' | 'OPTIONS' | 'PROPFIND' | 'TRACE'
  const cases: Array<[method: Method, url: string, allow: string]> = [
    ['POST', '/plants/1', ONE_PLANT],
    ['POST', '/plants/abc', ONE_PLANT],
    ['DELETE', '/plants', 'GET, HEAD, POST'],
    ['PUT', '/plants', 'GET, HEAD, POST'],
    ['PATCH', '/plants', 'GET, HEAD, POST'],
    ['PUT', '/health', 'GET, HEAD'],
    ['DELETE', '/health', 'GET, HEAD'],
    ['POST', '/openapi.json', 'GET, HEAD'],
    ['OPTIONS', '/plants/1', ONE_PLANT],
    ['PROPFIND', '/plants/1', ONE_PLANT],
    ['TRACE', '/plants', 'GET, HEAD, POST']
  ]
  for (const [method, url, allow] of cases) {
    // No token: which methods a path has is public (the OpenAPI document lists them).
    const res = await app.inject({ method, url })
    assertError(res, 405, `Method ${method} is not allowed on ${url} (it allows ${allow})`)
    assert.equal(res.headers.allow, allow, `${method} ${url}`)
    assert.equal(res.headers['www-authenticate'], undefined)
    const withToken = await app.inject({ method, url, headers: AUTH })
    assert.equal(withToken.statusCode, 405)
  }
})

test('the 405 reads no body and quotes the path without its query string', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.inject({
    method: 'POST',
    url: '/plants/1?token=secret',
    headers: { ...AUTH, 'content-type': 'application/json', 'content-encoding': 'gzip' },
    payload: '{"__proto__":{}}'
  })
  assertError(res, 405, `Method POST is not allowed on /plants/1 (it allows ${ONE_PLANT})`)
  assert.equal(res.headers.allow, ONE_PLANT)
})

test('unknown paths stay 404, whatever the method', async (t) => {
  const app = await buildTestApp(t)
  for (const [method, url] of [['GET', '/nowhere'], ['POST', '/plantz'], ['DELETE', '/plants/1/leaves'], ['PUT', '/'],
    ['OPTIONS', '/nowhere']] as const) {
    const res = await app.inject({ method, url, headers: AUTH })
    assertError(res, 404, `Route ${method} ${url} not found`)
    assert.equal(res.headers.allow, undefined)
  }
})

test('with CORS on, OPTIONS is answered on every path, and Allow lists it', async (t) => {
  const app = await buildTestApp(t, { CORS_ORIGINS: 'https://app.example' })
  const res = await app.inject({ method: 'DELETE', url: '/plants', headers: { origin: 'https://app.example' } })
  assertError(res, 405, 'Method DELETE is not allowed on /plants (it allows GET, HEAD, POST, OPTIONS)')
  assert.equal(res.headers.allow, 'GET, HEAD, POST, OPTIONS')
  assert.equal(res.headers['access-control-allow-origin'], 'https://app.example')
  // The preflight route matches unknown paths too: they stay 404s.
  assertError(await app.inject({ method: 'GET', url: '/nowhere' }), 404, 'Route GET /nowhere not found')
})

test('a method no route has (QUERY, PURGE…) is a 405 with Allow whatever its headers and body; on ' +
  'an unknown path a 404', async (t) => {
  const app = await buildTestApp(t)
  // Content-Type and framing never decide first: missing, malformed, foreign, with or without a body.
  const variants: Array<{ headers: Record<string, string>, payload?: string }> = [
    { headers: {} },
    { headers: AUTH },
    { headers: { 'content-type': 'application/json' }, payload: '{"name":"Fern"}' },
    { headers: { 'content-length': '2' }, payload: '{}' },
    { headers: { 'transfer-encoding': 'chunked' }, payload: '{}' },
    { headers: { 'content-type': ';;;' }, payload: '{}' },
    { headers: { 'content-type': 'text/plain', 'content-encoding': 'gzip' }, payload: 'not json' }
  ]
  for (const { headers, payload } of variants) {
    const where = JSON.stringify(headers)
    for (const [method, url, allow] of [['QUERY', '/plants', 'GET, HEAD, POST'], ['PURGE', '/plants/1', ONE_PLANT],
      ['POST', '/plants/1', ONE_PLANT]] as const) {
      const res = await app.inject({ method, url, headers, ...(payload !== undefined && { payload }) })
      assertError(res, 405, `Method ${method} is not allowed on ${url} (it allows ${allow})`)
      assert.equal(res.headers.allow, allow, `${method} ${url} ${where}`)
    }
    for (const method of ['QUERY', 'POST'] as const) {
      const res = await app.inject({ method, url: '/nowhere', headers, ...(payload !== undefined && { payload }) })
      assertError(res, 404, `Route ${method} /nowhere not found`)
      assert.equal(res.headers.allow, undefined, where)
    }
  }
})

test('a route that finds nothing to serve is a 404, not a 405: a missing Swagger UI file, GET and HEAD', async (t) => {
  const app = await buildTestApp(t)
  const missing = await app.inject({ method: 'GET', url: '/docs/static/nonexistent.js' })
  assertError(missing, 404, 'Route GET /docs/static/nonexistent.js not found')
  assert.equal(missing.headers.allow, undefined)
  const head = await app.inject({ method: 'HEAD', url: '/docs/static/nonexistent.js' })
  assert.equal(head.statusCode, 404)
  assert.equal(head.headers.allow, undefined)
  assert.equal(head.body, '')
  // The files that exist are served, and the other methods on the same path are still 405s.
  assert.equal((await app.inject({ method: 'GET', url: '/docs/static/swagger-ui.css' })).statusCode, 200)
  const post = await app.inject({ method: 'POST', url: '/docs/static/nonexistent.js' })
  assertError(post, 405, 'Method POST is not allowed on /docs/static/nonexistent.js (it allows GET, HEAD)')
})
