import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../../src/main/app.js'
import { loadConfig } from '../../../src/config/load-config.js'
import { TOKEN } from '../../helpers/app.js'

interface Line { msg: string, ip?: string, reqId?: string }

async function appWithLog (t: { after: (fn: () => Promise<void>) => void },
  env: NodeJS.ProcessEnv): Promise<{ app: FastifyInstance, lines: () => Line[] }> {
  let text = ''
  const app = await buildApp(loadConfig(
    { DATABASE_URL: ':memory:', API_TOKENS: TOKEN, LOG_LEVEL: 'info', RATE_LIMIT_MAX: '2', ...env }), {
    logStream: { write: (line: string) => { text += line } }
  })
  t.after(() => app.close())
  return { app, lines: () => text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Line) }
}

/** An unauthenticated request (rate-limited per IP) from `peer`, claiming to forward for `forwardedFor`. */
const fromPeer = (app: FastifyInstance, peer: string, forwardedFor?: string) => app.inject({
  url: '/openapi.json',
  remoteAddress: peer,
  headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor, 'x-forwarded-proto': 'https' }
})

const accessIps = (lines: Line[]): Array<string | undefined> => lines.filter(
  (line) => line.msg === 'request completed').map((line) => line.ip)

test('without TRUST_PROXY an X-Forwarded-For changes nothing: one bucket per peer, the peer in the log', async (t) => {
  const { app, lines } = await appWithLog(t, {})
  assert.equal((await fromPeer(app, '203.0.113.9', '198.51.100.1')).statusCode, 200)
  assert.equal((await fromPeer(app, '203.0.113.9', '198.51.100.2')).statusCode, 200)
  // Two requests spent the peer's bucket, whatever each claimed to forward for.
  assert.equal((await fromPeer(app, '203.0.113.9', '198.51.100.3')).statusCode, 429)
  assert.deepEqual(accessIps(lines()), ['203.0.113.9', '203.0.113.9', '203.0.113.9'])
})

test('an X-Forwarded-For from a peer that is not the trusted proxy changes nothing either', async (t) => {
  const { app, lines } = await appWithLog(t, { TRUST_PROXY: '10.0.0.0/8' })
  assert.equal((await fromPeer(app, '203.0.113.9', '198.51.100.1')).statusCode, 200)
  assert.equal((await fromPeer(app, '203.0.113.9', '198.51.100.2')).statusCode, 200)
  assert.equal((await fromPeer(app, '203.0.113.9', '198.51.100.3')).statusCode, 429)
  assert.deepEqual(accessIps(lines()), ['203.0.113.9', '203.0.113.9', '203.0.113.9'])
})

test('through a trusted proxy the client\'s address counts: its own bucket and its address in the log', async (t) => {
  const { app, lines } = await appWithLog(t, { TRUST_PROXY: '10.0.0.0/8' })
  assert.equal((await fromPeer(app, '10.1.2.3', '198.51.100.1')).statusCode, 200)
  assert.equal((await fromPeer(app, '10.1.2.3', '198.51.100.1')).statusCode, 200)
  assert.equal((await fromPeer(app, '10.1.2.3', '198.51.100.1')).statusCode, 429)
  // Another client behind the same proxy has a bucket of its own.
  assert.equal((await fromPeer(app, '10.1.2.3', '198.51.100.2')).statusCode, 200)
  assert.deepEqual(accessIps(lines()), ['198.51.100.1', '198.51.100.1', '198.51.100.1', '198.51.100.2'])
})

test('a hop count trusts that many proxies: the address left of them is the client, spoofed entries ' +
  'further left are ignored', async (t) => {
  const { app, lines } = await appWithLog(t, { TRUST_PROXY: '2' })
  // The peer (hop 0) is the second proxy; X-Forwarded-For: <spoofed by the client>, <client>, <first proxy>.
  assert.equal((await fromPeer(app, '10.0.0.2', '6.6.6.6, 198.51.100.7, 10.0.0.1')).statusCode, 200)
  assert.deepEqual(accessIps(lines()), ['198.51.100.7'])
})

test('the scheme the client used (X-Forwarded-Proto) is believed only from a trusted proxy', async (t) => {
  const { app } = await appWithLog(t, { TRUST_PROXY: 'loopback' })
  app.get('/scheme', { config: { rateLimit: false } },
    async (request) => ({ protocol: request.protocol, ip: request.ip }))
  const trusted = await app.inject({
    url: '/scheme',
    remoteAddress: '127.0.0.1',
    headers: { 'x-forwarded-for': '198.51.100.1', 'x-forwarded-proto': 'https' }
  })
  assert.deepEqual(trusted.json(), { protocol: 'https', ip: '198.51.100.1' })
  const untrusted = await app.inject({
    url: '/scheme',
    remoteAddress: '203.0.113.9',
    headers: { 'x-forwarded-for': '198.51.100.1', 'x-forwarded-proto': 'https' }
  })
  assert.deepEqual(untrusted.json(), { protocol: 'http', ip: '203.0.113.9' })
})
