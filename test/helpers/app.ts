import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'

export const TOKEN = 'test-token-0123456789abcdef0123456789'
export const AUTH = { authorization: `Bearer ${TOKEN}` } as const

/**
 * A fresh app on its own in-memory database, closed when the test ends.
 * `env` overrides the configuration the way environment variables would.
 */
export async function buildTestApp (t: { after: (fn: () => Promise<void>) => void }, env: NodeJS.ProcessEnv = {}): Promise<FastifyInstance> {
  const app = await buildApp(loadConfig({ DATABASE_URL: ':memory:', API_TOKENS: TOKEN, LOG_LEVEL: 'silent', ...env }))
  t.after(() => app.close())
  await app.ready()
  return app
}
