import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, TOKEN } from '../../helpers/app.js'
import { authenticatedOperations, neededScope, probe, scopedToken, SCOPES, tokensFile } from '../../helpers/scoped-tokens.js'

// Every operation × every scope with opaque tokens, on the store TEST_APP_STORE picks (CI runs both).
// The JWT half of the matrix is in test/plugins/app/oidc.test.ts, with a real provider.
test('scope matrix, opaque tokens: each operation answers a token with its scope and refuses every other with 403', async (t) => {
  const single = SCOPES.map((scope) => scopedToken(`only-${scope.replace(':', '-')}`, [scope]))
  const all = scopedToken('everything', SCOPES)
  const none = scopedToken('nothing-useful', ['plants:read'])
  const app = await buildTestApp(t, { API_TOKENS_FILE: tokensFile([...single, all]), API_TOKENS: TOKEN })
  const operations = await authenticatedOperations(app)
  assert.equal(operations.length, 19, 'the 14 operations and the HEAD of each of the 5 GETs')

  for (const operation of operations) {
    const needed = neededScope(operation.method, operation.path)
    const { request, status } = probe(operation)
    const label = `${operation.operationId} (${needed})`
    for (const token of [...single, all]) {
      const res = await app.inject({ ...request, headers: { authorization: `Bearer ${token.token}` } })
      if (token.scopes.includes(needed)) {
        assert.equal(res.statusCode, status, `${label} with ${token.name}`)
        continue
      }
      assert.equal(res.statusCode, 403, `${label} with ${token.name}`)
      assert.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="${needed}"`, label)
      if (request.method !== 'HEAD') assert.deepEqual(res.json(), { error: 403, message: `This token lacks the scope ${needed}, which this operation needs` }, label)
    }
    // A plain API_TOKENS token keeps every scope; an unknown token stays 401.
    assert.equal((await app.inject({ ...request, headers: { authorization: `Bearer ${TOKEN}` } })).statusCode, status, `${label} with API_TOKENS`)
    const unknown = await app.inject({ ...request, headers: { authorization: `Bearer ${none.token}` } })
    assert.equal(unknown.statusCode, 401, `${label} with a token not in the file`)
    assert.equal(unknown.headers['www-authenticate'], 'Bearer')
  }
})
