import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import type { RequestFunction } from '../../../src/webhooks/deliver.js'
import type { Resolver } from '../../../src/webhooks/url-policy.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { loopbackOnlyRequest } from '../../helpers/loopback-only.js'
import { AUTH_A, AUTH_B, buildSandboxApp, sandboxDatabases } from '../../helpers/sandbox.js'
import { bannerLine, startServer } from '../../helpers/server-process.js'
import { until } from '../../helpers/webhook-receiver.js'
import type { DeliveryBody } from '../../helpers/webhooks.js'
import { PLANT_CREATED } from '../../helpers/resources.js'

const [sqlite] = sandboxDatabases
assert.ok(sqlite !== undefined)

test('the sandbox says so: /health, the OpenAPI description, servers and security scheme', async (t) => {
  const app = await buildSandboxApp(t, sqlite, { SANDBOX_MAX_PLANTS: '20', SANDBOX_TTL_MS: '7200000' })
  const health = await app.inject({ url: '/health' })
  assert.equal(health.statusCode, 200)
  assert.deepEqual(health.json(), { status: 'ok', mode: 'sandbox' })
  const document = (await app.inject({ url: '/openapi.json' })).json()
  assert.equal((await new Validator().validate(document)).valid, true)
  assert.match(document.info.description,
    /^This service runs as a public sandbox: authorize with any token of 16 to 256 URL-safe characters/)
  assert.match(document.info.description,
    /at most 20 plants and 5 webhook subscriptions \(to public addresses only\); a token unused for 2 hours is deleted/)
  assert.deepEqual(document.servers,
    [{ url: '/', description: 'This service, a public sandbox (any token; data deleted when unused)' }])
  assert.match(document.components.securitySchemes.bearerAuth.description,
    /^Any token of 16 to 256 URL-safe characters: each token is a sandbox tenant/)
  assert.deepEqual(document.paths['/health'].get.responses['200'].content['application/json'].example,
    { status: 'ok', mode: 'sandbox' })
})

test('the start-up banner says the service runs as a sandbox', async (t) => {
  const server = await startServer(t,
    {
      env: {
        DATABASE_URL: sqlite.url(cleanupStack(t)),
        API_TOKENS: undefined,
        SANDBOX: '1',
        SANDBOX_TTL_MS: '60000',
        LOG_FORMAT: 'pretty'
      }
    })
  assert.match(server.stderr(),
    new RegExp(/SANDBOX=1: a public sandbox\. Any bearer token of 16-256 URL-safe characters is a tenant of /.source +
      /its own;\n {4}tenants unused for 1 minute are deleted, at most 10000 are kept\.\n/.source))
  assert.doesNotMatch(server.stderr(), /accepts the bearer token/)
  // Off a terminal, the same in the banner's JSON log line.
  const json = await startServer(t,
    {
      env: {
        DATABASE_URL: sqlite.url(cleanupStack(t)),
        API_TOKENS: undefined,
        SANDBOX: '1',
        SANDBOX_TTL_MS: '86400000'
      }
    })
  assert.deepEqual(bannerLine(json.stdout())?.sandbox, { ttl: '1 day', maxTenants: 10000 })
  assert.equal(bannerLine(json.stdout())?.generatedToken, undefined)
  const res = await fetch(`${server.baseUrl}/plants/1`, { headers: AUTH_A })
  assert.equal(res.status, 200)
  assert.equal(await server.stop(), 0)
})

test('rate limits: RATE_LIMIT_MAX per tenant, SANDBOX_RATE_LIMIT_PER_ADDRESS per client address whatever ' +
  'its tokens', async (t) => {
  const app = await buildSandboxApp(t, sqlite, { RATE_LIMIT_MAX: '2', SANDBOX_RATE_LIMIT_PER_ADDRESS: '4' })
  const get = async (auth: Record<string, string>,
    ip = '198.51.100.1') => (await app.inject({ url: '/plants/1', headers: auth, remoteAddress: ip })).statusCode
  assert.deepEqual([await get(AUTH_A), await get(AUTH_A), await get(AUTH_A)], [200, 200, 429])
  assert.equal(await get(AUTH_B), 200)
  // Four requests from this address so far: a fresh token from it is limited, one from elsewhere is not.
  const fresh = { authorization: 'Bearer sandbox-visitor-fresh-0123' }
  const refused = await app.inject({ url: '/plants/1', headers: fresh, remoteAddress: '198.51.100.1' })
  assert.equal(refused.statusCode, 429)
  const reset = refused.headers['ratelimit-reset']
  assert.match(String(reset), /^[1-9]\d*$/)
  // The headers of every other 429, for the address's limit.
  assert.deepEqual(
    {
      limit: refused.headers['ratelimit-limit'],
      remaining: refused.headers['ratelimit-remaining'],
      retryAfter: refused.headers['retry-after']
    },
    { limit: '4', remaining: '0', retryAfter: reset })
  assert.match(refused.json<{ message: string }>().message, /^Rate limit exceeded, retry in \d+ seconds$/)
  assert.equal(await get(fresh, '198.51.100.2'), 200)
})

for (const database of sandboxDatabases) {
  describe(`sandbox webhooks on ${database.name}`, () => {
    test('only public receivers, at creation and at delivery (a name that turns private is refused without ' +
      'a connection)', async (t) => {
      let rebound = false
      const resolve: Resolver = async (host) => {
        if (host === 'internal.example.com') return [{ address: '10.0.0.7', family: 4 }]
        if (host === 'hooks.example.com') return [{ address: rebound ? '127.0.0.1' : '93.184.216.34', family: 4 }]
        return []
      }
      const connections: string[] = []
      const request: RequestFunction = (url,
        options) => { connections.push(url.hostname); return loopbackOnlyRequest(url, options) }
      const app = await buildSandboxApp(t, database, { WEBHOOK_TIMEOUT_MS: '200' },
        { webhookResolve: resolve, webhookRequest: request })
      for (const url of ['http://127.0.0.1:8080/', 'http://[::1]/', 'http://internal.example.com/',
        'http://169.254.169.254/']) {
        const res = await app.inject({ method: 'POST', url: '/webhooks', headers: AUTH_A, payload: { url } })
        assert.equal(res.statusCode, 400, `${url}: ${res.body}`)
        assert.match(res.json<{ message: string }>().message, /is not allowed|only public addresses are allowed/)
      }
      const created = await app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: AUTH_A,
        payload: { url: 'http://hooks.example.com/in', events: [PLANT_CREATED] }
      })
      assert.equal(created.statusCode, 201, created.body)
      rebound = true
      assert.equal(
        (await app.inject({ method: 'POST', url: '/plants', headers: AUTH_A, payload: { name: 'x' } })).statusCode, 201)
      let deliveries: DeliveryBody[] = []
      await until('the delivery was attempted', async () => {
        deliveries = (await app.inject({ url: '/webhooks/1/deliveries', headers: AUTH_A })).json<DeliveryBody[]>()
        return deliveries[0] !== undefined && deliveries[0].attempts > 0
      })
      assert.match(deliveries[0]?.lastError ?? '',
        new RegExp(/^url-not-allowed: The webhook host hooks.example.com is not allowed: /.source +
          /it must resolve to public addresses only$/.source))
      assert.deepEqual(connections, [])
    })

    test('a tenant without webhooks starts no dispatcher; once subscribed, and after its store was closed ' +
      'and opened again, its events are delivered', async (t) => {
      const connections: string[] = []
      const request: RequestFunction = (url,
        options) => { connections.push(url.hostname); return loopbackOnlyRequest(url, options) }
      const app = await buildSandboxApp(t, database, { SANDBOX_OPEN_TENANTS: '1', SANDBOX_SEED: 'none' },
        { webhookRequest: request })
      assert.equal(
        (await app.inject({ method: 'POST', url: '/plants', headers: AUTH_A, payload: { name: 'before' } })).statusCode,
        201)
      assert.equal((await app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: AUTH_A,
        payload: { url: 'https://93.184.216.34/hooks', events: [PLANT_CREATED] }
      })).statusCode, 201)
      // B takes the only store: A's is closed, and opened again by A's next request.
      assert.equal((await app.inject({ url: '/plants', headers: AUTH_B })).statusCode, 200)
      assert.equal(app.sandbox?.registry.openCount, 1)
      assert.equal(
        (await app.inject({ method: 'POST', url: '/plants', headers: AUTH_A, payload: { name: 'after' } })).statusCode,
        201)
      let deliveries: DeliveryBody[] = []
      await until('the delivery was attempted', async () => {
        deliveries = (await app.inject({ url: '/webhooks/1/deliveries', headers: AUTH_A })).json<DeliveryBody[]>()
        return deliveries.length === 1 && (deliveries[0]?.attempts ?? 0) > 0
      })
      assert.deepEqual(connections, ['93.184.216.34'])
    })

    test('deliveries are paced per tenant: SANDBOX_WEBHOOK_ATTEMPTS_PER_MINUTE, one at a time', async (t) => {
      const connections: string[] = []
      const request: RequestFunction = (url,
        options) => { connections.push(url.hostname); return loopbackOnlyRequest(url, options) }
      const app = await buildSandboxApp(t, database, { SANDBOX_WEBHOOK_ATTEMPTS_PER_MINUTE: '1', SANDBOX_SEED: 'none' },
        { webhookRequest: request })
      assert.equal((await app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: AUTH_A,
        payload: { url: 'https://93.184.216.34/hooks', events: [PLANT_CREATED] }
      })).statusCode, 201)
      for (const name of ['a', 'b', 'c']) {
        assert.equal((await app.inject({ method: 'POST', url: '/plants', headers: AUTH_A, payload: { name } }))
          .statusCode, 201)
      }
      let deliveries: DeliveryBody[] = []
      await until('one delivery was attempted', async () => {
        deliveries = (await app.inject({ url: '/webhooks/1/deliveries', headers: AUTH_A })).json<DeliveryBody[]>()
        return deliveries.some((delivery) => delivery.attempts > 0)
      })
      // The next attempt may start a minute after the first: the other two wait untried.
      assert.deepEqual(deliveries.map((delivery) => delivery.attempts).sort(), [0, 0, 1])
      assert.deepEqual(connections, ['93.184.216.34'])
    })

    test('test events take the same pace: one test event, then 503 + Retry-After within the minute, with ' +
      'or after a delivery', async (t) => {
      const connections: string[] = []
      const request: RequestFunction = (url,
        options) => { connections.push(url.hostname); return loopbackOnlyRequest(url, options) }
      const app = await buildSandboxApp(t, database, { SANDBOX_WEBHOOK_ATTEMPTS_PER_MINUTE: '1', SANDBOX_SEED: 'none' },
        { webhookRequest: request })
      const subscribe = async (auth: Record<string, string>) =>
        assert.equal(
          (await app.inject(
            {
              method: 'POST',
              url: '/webhooks',
              headers: auth,
              payload: { url: 'https://93.184.216.34/hooks' }
            })).statusCode, 201)
      const sendTest = async (auth: Record<string, string>) => await app.inject({
        method: 'POST',
        url: '/webhooks/1/test',
        headers: auth
      })
      await subscribe(AUTH_A)
      assert.equal((await sendTest(AUTH_A)).statusCode, 200)
      for (let i = 0; i < 3; i++) {
        const refused = await sendTest(AUTH_A)
        assert.equal(refused.statusCode, 503, refused.body)
        assert.ok(Number(refused.headers['retry-after']) >= 59 && Number(refused.headers['retry-after']) <= 60,
          String(refused.headers['retry-after']))
      }
      assert.equal(connections.length, 1)
      // B's first attempt is a delivery: its test event waits for the next minute too.
      await subscribe(AUTH_B)
      assert.equal(
        (await app.inject({ method: 'POST', url: '/plants', headers: AUTH_B, payload: { name: 'b' } })).statusCode, 201)
      await until('B\'s delivery was attempted', () => connections.length === 2)
      assert.equal((await sendTest(AUTH_B)).statusCode, 503)
      assert.equal(connections.length, 2)
    })
  })
}

for (const database of sandboxDatabases) {
  test(`metrics on ${database.name}: the tenant count and the open stores, no series per tenant`, async (t) => {
    const app = await buildSandboxApp(t, database, { METRICS_PORT: '0' })
    for (const auth of [AUTH_A, AUTH_B]) {
      assert.equal((await app.inject({ url: '/plants/1', headers: auth })).statusCode, 200)
    }
    const address = app.metrics?.address()
    assert.ok(address !== undefined)
    const text = await (await fetch(`http://127.0.0.1:${address.port}/metrics`)).text()
    assert.match(text, /^plantstore_sandbox_tenants 2$/m)
    assert.match(text, /^plantstore_sandbox_open_tenants 2$/m)
    assert.doesNotMatch(text, /tenant="/)
  })
}
