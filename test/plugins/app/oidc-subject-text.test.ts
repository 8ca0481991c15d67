import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildTestApp } from '../../helpers/app.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { apiTestDatabases } from '../../helpers/databases.js'
import { AUDIENCE, forge, signingKey, startProvider } from '../../helpers/oidc-provider.js'
import { PUBLIC_RECEIVER } from '../../helpers/webhooks.js'
import { PLANTS_READ, PLANTS_WRITE } from '../../helpers/resources.js'

// A JWT's sub is a key of stored data (webhook owners, idempotency scopes): one that is not
// well-formed text (a NUL, a lone surrogate) has no faithful form in PostgreSQL, so it is refused
// as an invalid token, the same on both stores, rather than a 500 or two subjects made one.

const SCOPE = `${PLANTS_READ} ${PLANTS_WRITE} webhooks`
const CHECK = 'its subject (sub) is not well-formed text (a NUL or an unpaired UTF-16 surrogate)'

/** The three requests that key stored data by the principal. */
const requests = (authorization: string) => [
  {
    method: 'POST' as const,
    url: '/plants',
    headers: { authorization, 'idempotency-key': 'k-1' },
    payload: { name: 'Fern' }
  },
  { method: 'POST' as const, url: '/webhooks', headers: { authorization }, payload: { url: PUBLIC_RECEIVER } },
  { method: 'GET' as const, url: '/webhooks', headers: { authorization } }
]

async function assertRefused (app: FastifyInstance, token: string, label: string): Promise<void> {
  for (const request of requests(`Bearer ${token}`)) {
    const res = await app.inject(request)
    assert.equal(res.statusCode, 401, `${label}: ${request.method} ${request.url}: ${res.body}`)
    assert.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"')
    assert.deepEqual(res.json(), { error: 401, message: `Invalid token: ${CHECK}` })
  }
}

for (const database of apiTestDatabases) {
  describe(`a JWT whose sub is not well-formed text on ${database.name}`, () => {
    test('a sub with NUL, or a lone surrogate (short or long enough to be kept as a digest), is a ' +
      '401; well-formed subs stay distinct', async (t) => {
      const cleanup = cleanupStack(t)
      const key = await signingKey('key-1')
      const op = await startProvider([key])
      cleanup.after(op.stop)
      const app = await buildTestApp(cleanup, {
        ...database.env(cleanup),
        API_TOKENS: undefined,
        OIDC_ISSUER: op.issuer,
        OIDC_AUDIENCE: AUDIENCE
      })
      const long = 'x'.repeat(300)
      for (const sub of ['user\u0000admin', '\u0000', 'user\uD800', 'user\uDC00', '\uDBFF\uD800', `${long}\uD800`,
        `${long}\uDFFF`]) {
        await assertRefused(app, await forge(key, op, { sub, scope: SCOPE }), JSON.stringify(sub))
      }

      // Subjects that a lossy encoding would merge (a pair against its halves' replacement) stay two principals.
      const pair = await forge(key, op, { sub: 'user\uD83C\uDF3F', scope: SCOPE })
      const replaced = await forge(key, op, { sub: 'user\uFFFD', scope: SCOPE })
      const [create, subscribe, list] = requests(`Bearer ${pair}`)
      assert.ok(create !== undefined && subscribe !== undefined && list !== undefined)
      const created = await app.inject(create)
      assert.equal(created.statusCode, 201, created.body)
      assert.equal((await app.inject(subscribe)).statusCode, 201)
      const [otherCreate, , otherList] = requests(`Bearer ${replaced}`)
      assert.ok(otherCreate !== undefined && otherList !== undefined)
      const elsewhere = await app.inject(otherCreate)
      assert.deepEqual([elsewhere.statusCode, elsewhere.headers['idempotent-replayed']], [201, undefined],
        elsewhere.body)
      assert.deepEqual((await app.inject(otherList)).json(), [])
      assert.equal((await app.inject(list)).json<unknown[]>().length, 1)
    })
  })
}
