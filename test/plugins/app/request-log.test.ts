import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AccessLog } from '../../../plugins/app/request-log.js'
import { buildApp } from '../../../src/main/app.js'
import { loadConfig } from '../../../src/config/load-config.js'
import { AUTH, TOKEN } from '../../helpers/app.js'
import { tokenDigest } from '../../../src/auth/tokens.js'

interface Line { level: number, msg: string, reqId?: string, [field: string]: unknown }

async function appWithLog (t: { after: (fn: () => Promise<void>) => void },
  env: NodeJS.ProcessEnv = {}): Promise<{ app: FastifyInstance, lines: () => Line[] }> {
  let text = ''
  const app = await buildApp(loadConfig({ DATABASE_URL: ':memory:', API_TOKENS: TOKEN, LOG_LEVEL: 'info', ...env }), {
    logStream: { write: (line: string) => { text += line } }
  })
  t.after(() => app.close())
  await app.ready()
  return { app, lines: () => text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Line) }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

test('X-Request-Id: a sane client value is kept and answered back; each request without ' +
  'one gets a fresh UUID', async (t) => {
  const { app } = await appWithLog(t)
  const sane = 'Root-1-67891233-abcdef012345678912345678:parent.7_x'
  const kept = await app.inject({ url: '/health', headers: { 'x-request-id': sane } })
  assert.equal(kept.headers['x-request-id'], sane)
  const longest = 'a'.repeat(128)
  assert.equal((await app.inject({ url: '/health', headers: { 'x-request-id': longest } })).headers['x-request-id'],
    longest)

  const first = String((await app.inject({ url: '/health' })).headers['x-request-id'])
  const second = String((await app.inject({ url: '/health' })).headers['x-request-id'])
  assert.match(first, UUID)
  assert.match(second, UUID)
  assert.notEqual(first, second)
})

test('X-Request-Id: an unsafe or oversized client value is replaced, never echoed or logged', async (t) => {
  const { app, lines } = await appWithLog(t)
  for (const bad of ['a'.repeat(129), 'two words', 'semi;colon', 'slash/y', 'quote"', 'ünïcode', '']) {
    const res = await app.inject({ url: '/health', headers: { 'x-request-id': bad } })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['x-request-id']), UUID, JSON.stringify(bad))
  }
  assert.ok(lines().every((line) => line.reqId === undefined || UUID.test(line.reqId)))
})

test('errors carry the request id too: a 404, a 401 and a 400', async (t) => {
  const { app } = await appWithLog(t)
  for (const options of [{ url: '/nowhere' }, { url: '/plants' }, { url: '/plants/x', headers: AUTH }]) {
    const res = await app.inject({ ...options, headers: { ...options.headers, 'x-request-id': 'err-1' } })
    assert.ok(res.statusCode >= 400)
    assert.equal(res.headers['x-request-id'], 'err-1')
  }
})

test('one access line per request at info, with method, route template, status, duration, request id and the ' +
  'principal (a plain token: its digest prefix), never the token', async (t) => {
  const { app, lines } = await appWithLog(t)
  const created = await app.inject({
    method: 'POST',
    url: '/plants',
    headers: { ...AUTH, 'x-request-id': 'create-1' },
    payload: { name: 'Fern' }
  })
  assert.equal(created.statusCode, 201)
  await app.inject({ url: '/plants/1?x=1', headers: { ...AUTH, 'x-request-id': 'read-1' } })
  await app.inject({ url: '/nowhere/42', headers: { 'x-request-id': 'lost-1' } })
  await app.inject({
    url: '/plants',
    headers: { authorization: 'Bearer wrong-token-0123456789abcdef0123', 'x-request-id': 'denied-1' }
  })

  const access = lines().filter((line) => line.msg === 'request completed')
  assert.equal(access.length, 4)
  const strip = ({
    time: _time, pid: _pid, hostname: _hostname, durationMs,
    ...rest
  }: Line): Record<string, unknown> => {
    assert.equal(typeof durationMs, 'number')
    assert.ok((durationMs as number) >= 0)
    return rest
  }
  const principal = `sha256:${tokenDigest(TOKEN).slice(0, 12)}`
  assert.deepEqual(access.map(strip), [
    {
      level: 30,
      reqId: 'create-1',
      method: 'POST',
      route: '/plants',
      url: '/plants',
      statusCode: 201,
      ip: '127.0.0.1',
      principal,
      msg: 'request completed'
    },
    {
      level: 30,
      reqId: 'read-1',
      method: 'GET',
      route: '/plants/:id',
      url: '/plants/1?x=1',
      statusCode: 200,
      ip: '127.0.0.1',
      principal,
      msg: 'request completed'
    },
    {
      level: 30,
      reqId: 'lost-1',
      method: 'GET',
      route: 'unmatched',
      url: '/nowhere/42',
      statusCode: 404,
      ip: '127.0.0.1',
      msg: 'request completed'
    },
    {
      level: 30,
      reqId: 'denied-1',
      method: 'GET',
      route: '/plants',
      url: '/plants',
      statusCode: 401,
      ip: '127.0.0.1',
      msg: 'request completed'
    }
  ])
  const everything = lines().map((line) => JSON.stringify(line)).join('\n')
  assert.doesNotMatch(everything, new RegExp(TOKEN))
  assert.doesNotMatch(everything, /wrong-token/)
  assert.ok(!lines().some((line) => line.msg === 'incoming request'), 'the arrival is logged at debug only')
})

test('every log line written for a request carries its id: a failing request\'s error ' +
  'line and its access line', async (t) => {
  const { app, lines } = await appWithLog(t)
  t.mock.method(app.store.plants, 'get', async () => { throw new Error('boom') })
  const res = await app.inject({ url: '/plants/1', headers: { ...AUTH, 'x-request-id': 'fails-1' } })
  assert.equal(res.statusCode, 500)
  const mine = lines().filter((line) => line.reqId === 'fails-1')
  assert.deepEqual(mine.map((line) => line.msg), ['request failed', 'request completed'])
  assert.equal(lines().filter((line) => line.reqId !== undefined && line.reqId !== 'fails-1').length, 0)
})

test('at debug the arrival of each request is logged too, with the same id', async (t) => {
  const { app, lines } = await appWithLog(t, { LOG_LEVEL: 'debug' })
  await app.inject({ url: '/health', headers: { 'x-request-id': 'dbg-1' } })
  assert.deepEqual(lines().filter((line) => line.reqId === 'dbg-1').map((line) => line.msg),
    ['incoming request', 'request completed'])
})

test('at warn a completed request writes no access line; a response stream that failed still writes one', async (t) => {
  const { app, lines } = await appWithLog(t, { LOG_LEVEL: 'warn' })
  for (const [url, headers, status] of [['/plants/1', AUTH, 404], ['/plants', {}, 401],
    ['/health', {}, 200]] as const) {
    const res = await app.inject({ url, headers: { ...headers, 'x-request-id': `quiet-${status}` } })
    assert.equal(res.statusCode, status)
  }
  assert.deepEqual(lines(), [])

  // Fastify reports a failed response stream (the client went away mid-answer) to the controller.
  const request = {
    method: 'GET',
    url: '/plants/1',
    ip: '127.0.0.1',
    principal: undefined,
    routeOptions: { url: '/plants/:id' },
    log: app.log.child({ reqId: 'gone-1' })
  }
  new AccessLog().requestCompleted(new Error('socket hang up'), request as unknown as FastifyRequest,
    { statusCode: 200, elapsedTime: 1.234 } as unknown as FastifyReply)
  assert.deepEqual(lines().map(
    ({ level, reqId, msg, statusCode, route }) => ({ level, reqId, msg, statusCode, route })), [
    { level: 40, reqId: 'gone-1', msg: 'request errored', statusCode: 200, route: '/plants/:id' }
  ])
})

test('credentials a client puts in the query string never reach the log: the access line and the debug ' +
  'line show them redacted', async (t) => {
  const { app, lines } = await appWithLog(t, { LOG_LEVEL: 'debug' })
  const url = `/plants?limit=2&access_token=${TOKEN}&api_key=k3y&Token=t&x=1`
  // Unknown parameters are refused (400), and the request is logged all the same.
  assert.equal((await app.inject({ url, headers: { ...AUTH, 'x-request-id': 'q-1' } })).statusCode, 400)
  const mine = lines().filter((line) => line.reqId === 'q-1')
  assert.deepEqual(mine.map((line) => line.msg), ['incoming request', 'request completed'])
  const redacted = '/plants?limit=2&access_token=[redacted]&api_key=[redacted]&Token=[redacted]&x=1'
  assert.equal((mine[0]?.req as { url?: string }).url, redacted)
  assert.equal(mine[1]?.url, redacted)
  for (const line of lines()) assert.doesNotMatch(JSON.stringify(line), /k3y|access_token=(?!\[redacted\])/)
  assert.doesNotMatch(JSON.stringify(lines()), new RegExp(TOKEN))
})
