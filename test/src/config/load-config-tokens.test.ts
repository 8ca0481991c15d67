import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadConfig } from '../../../src/config/load-config.js'
import { withTrialToken } from '../../../src/auth/token-settings.js'
import { tokenDigest } from '../../../src/auth/tokens.js'
import { assertConfigRefused, assertConfigRefusedBy } from '../../helpers/config.js'
import { escaped, SCOPE_NAMES } from '../../helpers/resources.js'

const DIGEST = tokenDigest('a-token-0123456789abcdef0123456789abcdef')

function file (text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'plant-store-tokens-')), 'tokens')
  writeFileSync(path, text)
  return path
}

test('API_TOKENS_FILE: named entries (name, scopes, digest) beside plain tokens, comments and blank lines', () => {
  const config = loadConfig({
    API_TOKENS_FILE: file('# the dashboard ' +
      `reads\ndashboard plants:read sha256:${DIGEST.toUpperCase()}\n\nplain-token-0123456789abcdef0123456789\n` +
      `  batch   plants:write,plants:read,plants:write   sha256:${tokenDigest('b')}  \r\n`)
  })
  assert.deepEqual(config.tokens, ['plain-token-0123456789abcdef0123456789'])
  assert.deepEqual(config.namedTokens, [
    { name: 'dashboard', scopes: ['plants:read'], digest: DIGEST },
    { name: 'batch', scopes: ['plants:write', 'plants:read'], digest: tokenDigest('b') }
  ])
  assert.equal(config.tokenGenerated, false, 'named entries alone are tokens enough')
  assert.equal(loadConfig({ API_TOKENS_FILE: file(`a webhooks sha256:${DIGEST}\n`) }).tokenGenerated, false)
})

test('API_TOKENS_FILE: a malformed named entry stops the start, naming its line and never a token', () => {
  assertConfigRefused([
    [{ API_TOKENS_FILE: file('ci plants:read\n') },
      /API_TOKENS_FILE line 1: a named entry is "<name> <scope>\[,<scope>…\] sha256:<hex digest>"/],
    [{ API_TOKENS_FILE: file(`\nci plants:read sha256:${DIGEST} extra\n`) },
      /API_TOKENS_FILE line 2: a named entry is/],
    [{ API_TOKENS_FILE: file(`c/i plants:read sha256:${DIGEST}\n`) },
      /line 1: a name is 1 to 64 of A-Z a-z 0-9 \. _ -/],
    [{ API_TOKENS_FILE: file(`ci plants:delete sha256:${DIGEST}\n`) },
      new RegExp(`line 1: unknown scope "plants:delete" ${escaped(`(known: ${SCOPE_NAMES})`)}`)],
    [{ API_TOKENS_FILE: file(`ci plants:read ${DIGEST}\n`) },
      /line 1: the third field is sha256: and the token's 64 hex digit SHA-256/],
    [{ API_TOKENS_FILE: file(`ci plants:read sha256:${DIGEST.slice(1)}\n`) }, /line 1: the third field is sha256:/],
    [{ API_TOKENS_FILE: file(`ci plants:read sha256:${DIGEST}\nci webhooks sha256:${tokenDigest('other')}\n`) },
      /line 2: the name ci is used twice/],
    [{ API_TOKENS_FILE: file(`ci plants:read sha256:${DIGEST}\ncd webhooks sha256:${DIGEST}\n`) },
      /line 2: the same token digest as the entry ci/]
  ])
})

test('a token setting that is set but holds no token stops the start: no token is made up', () => {
  assertConfigRefused([
    [{ API_TOKENS: ' , ' }, /^invalid configuration: API_TOKENS is set but holds no token \(unset it to have none\)$/],
    [{ API_TOKENS: ',' }, /API_TOKENS is set but holds no token/],
    [{ API_TOKENS_FILE: file('') },
      /^invalid configuration: API_TOKENS_FILE holds no token \(.+\); with no token nothing can call the API$/],
    [{ API_TOKENS_FILE: file('# revoked: the last key\n\n   \n') }, /API_TOKENS_FILE holds no token/],
    [{ API_TOKENS: 'a-token-0123456789abcdef0123456789abcdef', API_TOKENS_FILE: file('# none\n') },
      /API_TOKENS_FILE holds no token/]
  ])
})

test('a token setting set but empty (an empty Kubernetes Secret) stops the start naming it: ' +
  'read as unset, it would make one up', () => {
  for (const setting of ['API_TOKENS', 'API_TOKENS_FILE']) {
    for (const value of ['', '   ', '\t']) {
      assertConfigRefused(
        [[{ [setting]: value },
          new RegExp(`^invalid configuration: ${setting} is set but holds no token \\(unset it to have none\\)$`)]])
      assertConfigRefused(
        [[{ [setting]: value, OIDC_ISSUER: 'https://login.example.com', OIDC_AUDIENCE: 'plants' },
          new RegExp(setting)]])
    }
  }
})

test('withTrialToken: with no token, OIDC_ISSUER or sandbox, a token is made up only at a ' +
  'terminal; elsewhere the start is refused', () => {
  const made = withTrialToken(loadConfig({}), true)
  assert.equal(made.tokenGenerated, true)
  assert.equal(made.tokens.length, 1)
  assert.match(made.tokens[0] ?? '', /^[A-Za-z0-9_-]{43}$/)
  assert.notEqual(withTrialToken(loadConfig({}), true).tokens[0], made.tokens[0], 'a new random token each start')
  assertConfigRefusedBy(() => withTrialToken(loadConfig({}), false),
    new RegExp(/^invalid configuration: no API_TOKENS, API_TOKENS_FILE or OIDC_ISSUER is set, so nothing /.source +
      /could call the API \(a token is made up for a trial run only at a terminal; plant-store token prints /.source +
      /one\)$/.source))
  for (const env of [{ API_TOKENS: 'a-token-0123456789abcdef0123456789abcdef' },
    { API_TOKENS_FILE: file(`a webhooks sha256:${DIGEST}\n`) },
    { OIDC_ISSUER: 'https://login.example.com', OIDC_AUDIENCE: 'plants' }, { SANDBOX: '1' }]) {
    for (const terminal of [true, false]) {
      const config = loadConfig(env)
      assert.equal(withTrialToken(config, terminal), config, JSON.stringify(env))
    }
  }
})

test('API_TOKENS_FILE: names that differ only in case (ro, RO) stop the start naming both: one ' +
  'principal or two would be a guess', () => {
  assertConfigRefused([
    [{ API_TOKENS_FILE: file(`ro plants:read sha256:${DIGEST}\nRO plants:write sha256:${tokenDigest('other')}\n`) },
      /^invalid configuration: API_TOKENS_FILE line 2: the names ro and RO differ only in case$/]
  ])
})

test('a plain token that is also a named API_TOKENS_FILE entry stops the start, naming the ' +
  'entry and never the token', () => {
  const token = 'a-token-0123456789abcdef0123456789abcdef'
  const named = `dashboard plants:read sha256:${DIGEST}\n`
  for (const env of [{ API_TOKENS: `other-token-0123456789abcdef0123456789, ${token}`, API_TOKENS_FILE: file(named) },
    { API_TOKENS_FILE: file(`${named}${token}\n`) }]) {
    assert.throws(() => loadConfig(env), (err: unknown) => {
      assert.ok(err instanceof Error)
      assert.equal(err.message,
        'invalid configuration: the API_TOKENS_FILE entry dashboard is also given as a plain token (every ' +
          'scope): keep one of the two')
      return true
    })
  }
  assert.deepEqual(loadConfig(
    { API_TOKENS: 'other-token-0123456789abcdef0123456789', API_TOKENS_FILE: file(named) }).namedTokens,
  [{ name: 'dashboard', scopes: ['plants:read'], digest: DIGEST }])
})

test('OIDC_ISSUER and OIDC_AUDIENCE: both or neither; https (http on loopback only); skew and ' +
  'cooldown default to 30 s', () => {
  assert.equal(loadConfig({}).oidc, undefined)
  const config = loadConfig({
    OIDC_ISSUER: 'https://login.example.com/realms/plants',
    OIDC_AUDIENCE: 'https://plants.example.com'
  })
  assert.deepEqual(config.oidc, {
    issuer: 'https://login.example.com/realms/plants',
    audience: 'https://plants.example.com',
    clockSkewMs: 30_000,
    jwksCooldownMs: 30_000,
    requireAtJwt: true
  })
  assert.equal(config.tokenGenerated, false, 'JWTs alone: no token is made up')
  assert.deepEqual(config.tokens, [])
  assert.deepEqual(loadConfig(
    {
      OIDC_ISSUER: 'http://127.0.0.1:4000',
      OIDC_AUDIENCE: 'plants',
      OIDC_CLOCK_SKEW_MS: '0',
      OIDC_JWKS_COOLDOWN_MS: '1000',
      OIDC_REQUIRE_AT_JWT: '0'
    }).oidc,
  { issuer: 'http://127.0.0.1:4000', audience: 'plants', clockSkewMs: 0, jwksCooldownMs: 1000, requireAtJwt: false })
  assert.equal(loadConfig({ OIDC_ISSUER: 'http://localhost:4000/', OIDC_AUDIENCE: 'plants' }).oidc?.issuer,
    'http://localhost:4000/', 'kept exactly as tokens name it')
  assertConfigRefused([
    [{ OIDC_AUDIENCE: 'plants' }, /OIDC_AUDIENCE is set but OIDC_ISSUER is not/],
    [{ OIDC_ISSUER: 'https://login.example.com' }, /OIDC_AUDIENCE must be set with OIDC_ISSUER/],
    [{ OIDC_ISSUER: 'login.example.com', OIDC_AUDIENCE: 'plants' }, /OIDC_ISSUER must be an absolute https URL/],
    [{ OIDC_ISSUER: 'http://login.example.com', OIDC_AUDIENCE: 'plants' }, /http only on loopback/],
    [{ OIDC_ISSUER: 'https://user:pw@login.example.com', OIDC_AUDIENCE: 'plants' },
      /without credentials, query or fragment/],
    [{ OIDC_ISSUER: 'https://login.example.com?x=1', OIDC_AUDIENCE: 'plants' },
      /without credentials, query or fragment/],
    [{ OIDC_ISSUER: 'https://login.example.com', OIDC_AUDIENCE: 'plants', OIDC_CLOCK_SKEW_MS: '-1' },
      /OIDC_CLOCK_SKEW_MS must be >= 0/],
    [{ OIDC_ISSUER: 'https://login.example.com', OIDC_AUDIENCE: 'plants', OIDC_JWKS_COOLDOWN_MS: 'often' },
      /OIDC_JWKS_COOLDOWN_MS must be integer/]
  ])
})
