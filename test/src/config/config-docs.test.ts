import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError } from '../../../src/lib/errors.js'
import { loadConfig } from '../../../src/config/load-config.js'
import { buildTestApp } from '../../helpers/app.js'

/**
 * The settings of the published documentation: PUBLIC_URL (OpenAPI `servers`) and DOCS_PERSIST_AUTHORIZATION (Swagger
 * UI).
 */

test('PUBLIC_URL: unset by default; an absolute http(s) URL is kept without its trailing slash', () => {
  assert.equal(loadConfig({}).publicUrl, undefined)
  assert.equal(loadConfig({ PUBLIC_URL: 'https://plants.example.com' }).publicUrl, 'https://plants.example.com')
  assert.equal(loadConfig({ PUBLIC_URL: 'http://127.0.0.1:3000/' }).publicUrl, 'http://127.0.0.1:3000')
  assert.equal(loadConfig({ PUBLIC_URL: 'https://example.com/api/v1//' }).publicUrl, 'https://example.com/api/v1')
})

test('PUBLIC_URL that is not an absolute http(s) URL, carries credentials, a query or a ' +
  'fragment stops the start', () => {
  const cases: Array<[string, string]> = [
    ['plants.example.com', 'must be an absolute http or https URL'],
    ['/plants', 'must be an absolute http or https URL'],
    ['ftp://plants.example.com', 'must be an absolute http or https URL'],
    ['https://user:secret@plants.example.com', 'must not carry credentials'],
    ['https://user@plants.example.com', 'must not carry credentials'],
    ['https://plants.example.com/?v=1', 'must have no query string or fragment'],
    ['https://plants.example.com?', 'must have no query string or fragment'],
    ['https://plants.example.com/#docs', 'must have no query string or fragment']
  ]
  for (const [value, problem] of cases) {
    assert.throws(() => loadConfig({ PUBLIC_URL: value }), (err: unknown) => {
      assert.ok(err instanceof ConfigError)
      assert.equal(err.message, `invalid configuration: PUBLIC_URL ${problem} (e.g. https://plants.example.com)`)
      assert.doesNotMatch(err.message, /secret/)
      return true
    }, value)
  }
  assert.equal(loadConfig({ PUBLIC_URL: '' }).publicUrl, undefined, 'empty is unset')
})

test('Swagger UI keeps the token in localStorage only with DOCS_PERSIST_AUTHORIZATION=1', async (t) => {
  assert.equal(loadConfig({}).docs.persistAuthorization, false)
  assert.equal(loadConfig({ DOCS_PERSIST_AUTHORIZATION: '1' }).docs.persistAuthorization, true)
  assert.throws(() => loadConfig({ DOCS_PERSIST_AUTHORIZATION: 'yes' }),
    /DOCS_PERSIST_AUTHORIZATION must be equal to one of the allowed values/)
  const initializer = async (env: NodeJS.ProcessEnv): Promise<string> => {
    const app = await buildTestApp(t, env)
    const res = await app.inject({ url: '/docs/static/swagger-initializer.js' })
    assert.equal(res.statusCode, 200)
    return res.body
  }
  assert.match(await initializer({}), /const config = \{"persistAuthorization":false,/)
  assert.match(await initializer({ DOCS_PERSIST_AUTHORIZATION: '0' }), /const config = \{"persistAuthorization":false,/)
  assert.match(await initializer({ DOCS_PERSIST_AUTHORIZATION: '1' }), /const config = \{"persistAuthorization":true,/)
})
