import assert from 'node:assert/strict'
import { test } from 'node:test'
import { redactQuery, redactUrl } from '../../../plugins/http/redact-url.js'

test('redactUrl: parameters named like credentials lose their values; the rest stays as sent', () => {
  assert.equal(redactUrl('/plants/1'), '/plants/1')
  assert.equal(redactUrl('/plants?limit=20&offset=40'), '/plants?limit=20&offset=40')
  assert.equal(redactUrl('/plants?access_token=abc&limit=1'), '/plants?access_token=[redacted]&limit=1')
  const names = ['token', 'access_token', 'refresh_token', 'id_token', 'api_key', 'apikey', 'API-KEY', 'X-Api-Key',
    'key', 'secret',
    'client_secret', 'password', 'passwd', 'pwd', 'auth', 'authorization', 'credentials', 'session', 'sessionid',
    'signature', 'sig', 'code']
  for (const name of names) assert.equal(redactQuery(`${name}=v&a=b`), `${name}=[redacted]&a=b`, name)
  // Percent-encoded names are judged decoded; a name without a value, or with a malformed escape, too.
  assert.equal(redactQuery('access%5Ftoken=v'), 'access%5Ftoken=[redacted]')
  assert.equal(redactQuery('token'), 'token=[redacted]')
  assert.equal(redactQuery('token%zz=v&name=%zz'), 'token%zz=[redacted]&name=%zz')
  assert.equal(redactQuery('name=token&design=x'), 'name=token&design=x')
  assert.equal(redactUrl('/?'), '/?')
})
