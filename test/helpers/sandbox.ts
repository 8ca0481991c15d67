import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { BuildOptions } from '../../src/main/app.js'
import { buildTestApp } from './app.js'
import { cleanupStack, tempDatabaseFile, type Cleanup } from './cleanup.js'
import { adminQuery, TEST_DATABASE_URL, withSchema } from './postgres.js'

/** Two sandbox tokens (any 16 to 256 URL-safe characters): two tenants. */
export const TOKEN_A = 'sandbox-visitor-a-0123456789'
export const TOKEN_B = 'sandbox-visitor-b-0123456789'
export const AUTH_A = { authorization: `Bearer ${TOKEN_A}` } as const
export const AUTH_B = { authorization: `Bearer ${TOKEN_B}` } as const

/** A store a sandbox runs on; `url` makes a fresh one whose tenants (files or schemas) go when the test ends. */
export interface SandboxDatabase {
  name: string
  url: (t: Cleanup) => string
}

/** The sandbox schemas of a PostgreSQL DATABASE_URL's schema, as its registry lists them. */
export async function tenantSchemas (schema: string): Promise<string[]> {
  try {
    return (await adminQuery<{ schema_name: string }>(
      `SELECT schema_name FROM ${schema}.sandbox_tenants ORDER BY schema_name`)).map((row) => row.schema_name)
  } catch (err) {
    if ((err as { code?: unknown }).code === '42P01' || (err as { code?: unknown }).code === '3F000') return []
    throw err
  }
}

/** Every sandbox schema on the server whose name is in `names`: what actually exists. */
export async function existingSchemas (names: readonly string[]): Promise<string[]> {
  return (await adminQuery<{ nspname: string }>(
    'SELECT nspname FROM pg_namespace WHERE nspname = ANY ($1) ORDER BY nspname', [names])).map((row) => row.nspname)
}

/** A fresh PostgreSQL schema for a sandbox; it and its tenants' schemas are dropped when the test ends. */
export function sandboxSchemaUrl (t: Cleanup): { url: string, schema: string } {
  if (TEST_DATABASE_URL === undefined) throw new Error('TEST_DATABASE_URL is not set')
  const schema = `plant_store_test_${randomBytes(6).toString('hex')}`
  t.after(async () => {
    for (const tenant of await tenantSchemas(schema)) await adminQuery(`DROP SCHEMA IF EXISTS ${tenant} CASCADE`)
    await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  })
  return { url: withSchema(TEST_DATABASE_URL, schema), schema }
}

export const sandboxDatabases: readonly SandboxDatabase[] = [
  { name: 'SQLite', url: (t) => tempDatabaseFile(t, 'plant-store-sandbox-') },
  ...(TEST_DATABASE_URL === undefined ? [] : [{ name: 'PostgreSQL', url: (t: Cleanup) => sandboxSchemaUrl(t).url }])
]

/** A manual clock: tests move it to expire tenants instead of waiting. */
export function manualClock (start = Date.now()): { now: () => number, advance: (ms: number) => void } {
  let now = start
  return { now: () => now, advance: (ms) => { now += ms } }
}

/**
 * A sandbox app on `database` (no API_TOKENS: SANDBOX=1 refuses them), closed before its files or
 * schemas are removed.
 */
export async function buildSandboxApp (t: { after: (fn: () => Promise<void>) => void }, database: SandboxDatabase,
  env: NodeJS.ProcessEnv = {}, options: BuildOptions = {}): Promise<FastifyInstance> {
  const cleanup = cleanupStack(t)
  const url = database.url(cleanup)
  return await buildTestApp(cleanup,
    { DATABASE_URL: url, API_TOKENS: undefined, SANDBOX: '1', PG_POOL_MAX: '4', ...env }, options)
}
