import assert from 'node:assert/strict'
import { test } from 'node:test'
import { bearerToken, TokenSet } from '../../src/auth/tokens.js'
import { AUTH, buildTestApp, captureLog, TOKEN } from '../helpers/app.js'
import { SCOPES } from '../helpers/resources.js'

test('TokenSet matches every configured token, and nothing else', () => {
  const second = 'second-token-0123456789abcdef0123456789'
  const tokens = new TokenSet([TOKEN, second], [], new Set(SCOPES))
  assert.ok(tokens.match(TOKEN))
  assert.ok(tokens.match(second))
  // Same length, prefix, longer, shorter, empty: all refused.
  for (const wrong of [TOKEN.slice(0, -1) + 'X', TOKEN.slice(0, -1), `${TOKEN}0`, '', second.toUpperCase()]) {
    assert.equal(tokens.match(wrong), undefined, wrong)
  }
  assert.equal(bearerToken(`bEaReR ${TOKEN}`), TOKEN)
  assert.equal(bearerToken(`Basic ${TOKEN}`), undefined)
})

test('tokens and the Authorization header never reach the log, error bodies or the OpenAPI document', async (t) => {
  const log = captureLog()
  const wrongToken = 'wrong-token-0123456789abcdef0123456789'
  const app = await buildTestApp(t, { DATABASE_URL: ':memory:', LOG_LEVEL: 'trace' }, { logStream: log.stream })
  await app.store.plants.create({ id: 1n, name: 'Fern' })

  const bodies: string[] = []
  const send = async (headers: Record<string, string>, url = '/plants/1'): Promise<number> => {
    const res = await app.inject({ method: 'DELETE', url, headers })
    bodies.push(res.body, JSON.stringify(res.headers))
    return res.statusCode
  }
  assert.equal(await send(AUTH), 204)
  assert.equal(await send({ authorization: `Bearer ${wrongToken}` }), 401)
  assert.equal(await send({ authorization: `Basic ${TOKEN}` }), 401)
  assert.equal(await send({ authorization: TOKEN }), 401)
  // A crash inside a request: logged as a 500 with its error, still without the token.
  app.store.plants.delete = async () => { throw new Error('SQLITE_IOERR: disk I/O error') }
  assert.equal(await send(AUTH, '/plants/2'), 500)
  const openapi = (await app.inject({ method: 'GET', url: '/openapi.json' })).body

  assert.match(log.text(), /request failed/, 'the 500 was logged')
  assert.match(log.text(), /unauthorized/, 'the auth failures were logged')
  for (const secret of [TOKEN, wrongToken]) {
    assert.equal(log.text().includes(secret), false, 'a token reached the log')
    assert.equal(bodies.some((body) => body.includes(secret)), false, 'a token reached a response')
    assert.equal(openapi.includes(secret), false, 'a token reached the OpenAPI document')
  }
  assert.equal(/authorization"\s*:\s*"(?!\[redacted\])/i.test(log.text()), false,
    'an Authorization header reached the log')
})
