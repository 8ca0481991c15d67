import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildTestApp } from '../../helpers/app.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { apiTestDatabases } from '../../helpers/databases.js'
import { AUDIENCE, forge, signingKey, startProvider } from '../../helpers/oidc-provider.js'
import { PUBLIC_RECEIVER } from '../../helpers/webhooks.js'
import { PLANTS_READ, PLANTS_WRITE } from '../../helpers/resources.js'

// A JWT's sub (and client_id) may be any string: a principal of ~3,000 characters owns webhooks
// and idempotency keys like any other, on every store (PostgreSQL's index rows are bounded).

const SCOPE = `${PLANTS_READ} ${PLANTS_WRITE} webhooks`
/** Random, so PostgreSQL cannot compress it into an index row. */
const SUB = randomBytes(2250).toString('base64url').slice(0, 2999)
const longSub = (last: string): string => `${SUB}${last}`

const createPlant = async (app: FastifyInstance, token: string, key: string) =>
  await app.inject({
    method: 'POST',
    url: '/plants',
    headers: { authorization: `Bearer ${token}`, 'idempotency-key': key },
    payload: { name: 'Fern' }
  })

for (const database of apiTestDatabases) {
  describe(`a JWT with a 3,000-character sub on ${database.name}`, () => {
    test('creates and lists its webhooks and replays its keyed creates; a sub differing in its last character ' +
      'is another principal', async (t) => {
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
      const token = await forge(key, op, {
        sub: longSub('a'),
        client_id: randomBytes(2250).toString('base64url'),
        scope: SCOPE
      })
      const other = await forge(key, op, { sub: longSub('b'), scope: SCOPE })
      const auth = { authorization: `Bearer ${token}` }

      const created = await app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: auth,
        payload: { url: PUBLIC_RECEIVER }
      })
      assert.equal(created.statusCode, 201, created.body)
      const { id } = created.json<{ id: number }>()
      const listed = await app.inject({ url: '/webhooks', headers: auth })
      assert.equal(listed.statusCode, 200, listed.body)
      assert.deepEqual(listed.json<Array<{ id: number }>>().map((hook) => hook.id), [id])
      assert.equal(
        (await app.inject({ url: `/webhooks/${id}`, headers: { authorization: `Bearer ${other}` } })).statusCode, 404)

      const first = await createPlant(app, token, 'k-1')
      assert.equal(first.statusCode, 201, first.body)
      const replay = await createPlant(app, token, 'k-1')
      assert.deepEqual([replay.statusCode, replay.headers['idempotent-replayed'], replay.body],
        [201, 'true', first.body])
      const elsewhere = await createPlant(app, other, 'k-1')
      assert.deepEqual([elsewhere.statusCode, elsewhere.headers['idempotent-replayed']], [201, undefined],
        elsewhere.body)
      assert.notEqual(elsewhere.json<{ id: number }>().id, first.json<{ id: number }>().id)
    })
  })
}
