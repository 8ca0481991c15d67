import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import { tokenDigest } from '../../src/auth/tokens.js'
import { cleanupStack } from '../helpers/cleanup.js'
import { adminQuery, TEST_DATABASE_URL } from '../helpers/postgres.js'
import { AUTH_A, AUTH_B, existingSchemas, sandboxSchemaUrl, TOKEN_A } from '../helpers/sandbox.js'
import { startServer } from '../helpers/server-process.js'
import { until } from '../helpers/webhook-receiver.js'

const SEED_IDS = [1, 2, 3, 4, 5]

async function ids (base: string, auth: Record<string, string>): Promise<number[]> {
  const res = await fetch(`${base}/plants?limit=100`, { headers: auth })
  assert.equal(res.status, 200)
  return (await res.json() as Array<{ id: number }>).map((plant) => plant.id)
}

/** Two sandbox instances on one fresh schema; stopped, then the schemas dropped, when the test ends. */
async function twoInstances (t: TestContext,
  env: Record<string, string> = {}): Promise<{ a: string, b: string, schema: string }> {
  const cleanup = cleanupStack(t)
  const { url, schema } = sandboxSchemaUrl(cleanup)
  const start = async (): Promise<string> => {
    const server = await startServer(undefined,
      { env: { DATABASE_URL: url, API_TOKENS: undefined, SANDBOX: '1', PG_POOL_MAX: '4', ...env } })
    cleanup.after(async () => { assert.equal(await server.stop(), 0, 'the instance stops cleanly') })
    return server.baseUrl
  }
  const [a, b] = await Promise.all([start(), start()])
  return { a, b, schema }
}

// Several stateless instances share the sandbox: the registry table and the tenants' schemas.
if (TEST_DATABASE_URL !== undefined) {
  describe('a sandbox on two instances on one PostgreSQL database', () => {
    test('a tenant is the same on both, another tenant sees none of it, and a new tenant is seeded once', async (t) => {
      const { a, b, schema } = await twoInstances(t)
      // Both open the new tenant at once: one of them creates and seeds it.
      const [first, second] = await Promise.all([ids(a, AUTH_A), ids(b, AUTH_A)])
      assert.ok(first.every((id) => SEED_IDS.includes(id)) && second.every((id) => SEED_IDS.includes(id)))
      assert.deepEqual(await ids(a, AUTH_A), SEED_IDS)
      const created = await fetch(`${a}/plants`, {
        method: 'POST',
        headers: { ...AUTH_A, 'content-type': 'application/json' },
        body: '{"name":"on a"}'
      })
      assert.equal(created.status, 201)
      assert.deepEqual(await ids(b, AUTH_A), [...SEED_IDS, 6])
      assert.equal((await fetch(`${b}/plants/6`, { headers: AUTH_B })).status, 404)
      assert.deepEqual(await ids(b, AUTH_B), SEED_IDS)
      const rows = await adminQuery<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.sandbox_tenants`)
      assert.equal(rows[0]?.n, '2')
    })

    test('a tenant idle past SANDBOX_TTL_MS is deleted by one instance while the other had it open; its next ' +
      'request starts afresh', async (t) => {
      const { a, b, schema } = await twoInstances(t, { SANDBOX_TTL_MS: '2000' })
      const created = await fetch(`${a}/plants`, {
        method: 'POST',
        headers: { ...AUTH_A, 'content-type': 'application/json' },
        body: '{"name":"kept?"}'
      })
      assert.equal(created.status, 201)
      assert.deepEqual(await ids(b, AUTH_A), [...SEED_IDS, 6])
      const { tenantSchema } = await import('../../src/sandbox/postgres-tenants.js')
      const tenant = tenantSchema(schema, tokenDigest(TOKEN_A))
      await until('the idle tenant is deleted', async () => (await existingSchemas([tenant])).length === 0, 20_000)
      assert.deepEqual(await ids(b, AUTH_A), SEED_IDS)
      assert.deepEqual(await ids(a, AUTH_A), SEED_IDS)
    })
  })
}
