import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, TOKEN } from '../../helpers/app.js'
import {
  assertScopeMatrix, authenticatedOperations, probe, scopedToken, SCOPES,
  tokensFile
} from '../../helpers/scoped-tokens.js'

// Every operation × every scope with opaque tokens, on the store TEST_APP_STORE picks (CI runs both).
// The JWT half of the matrix is in test/plugins/app/oidc.test.ts, with a real provider.
test('scope matrix, opaque tokens: each operation answers a token with its scope and refuses ' +
  'every other with 403', async (t) => {
  const single = SCOPES.map((scope) => scopedToken(`only-${scope.replace(':', '-')}`, [scope]))
  const all = scopedToken('everything', SCOPES)
  const app = await buildTestApp(t, { API_TOKENS_FILE: tokensFile([...single, all]), API_TOKENS: TOKEN })
  await assertScopeMatrix(app, [
    ...[...single, all].map(({ name, scopes, token }) => ({ label: name, scopes, authorization: `Bearer ${token}` })),
    // A plain API_TOKENS token keeps every scope.
    { label: 'API_TOKENS', scopes: SCOPES, authorization: `Bearer ${TOKEN}` }
  ])
  // A token that is not in the file stays 401, whatever the operation.
  const stranger = scopedToken('stranger', SCOPES)
  for (const operation of await authenticatedOperations(app)) {
    const res = await app.inject({
      ...probe(operation).request,
      headers: { authorization: `Bearer ${stranger.token}` }
    })
    assert.equal(res.statusCode, 401, operation.operationId)
    assert.equal(res.headers['www-authenticate'], 'Bearer')
  }
})
