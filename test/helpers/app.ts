import type { FastifyInstance } from 'fastify'
import { buildApp, type BuildOptions } from '../../src/main/app.js'
import { loadConfig, type Config } from '../../src/config/load-config.js'
import { cleanupStack, type Cleanup } from './cleanup.js'
import { loopbackOnlyRequest } from './loopback-only.js'
import { scratchDatabaseUrl } from './postgres.js'

export const TOKEN = 'test-token-0123456789abcdef0123456789'
export const AUTH = { authorization: `Bearer ${TOKEN}` } as const

/**
 * A fresh app on its own in-memory database, closed when the test ends.
 * `env` overrides the configuration the way environment variables would; `options` go to buildApp
 * (e.g. `logStream: log.stream` with a captureLog()).
 * With TEST_APP_STORE=postgres the default is a fresh PostgreSQL schema instead (CI runs the API tests both ways).
 * `configure` changes the loaded configuration where no variable can (named tokens with a test resource's scopes).
 */
export async function buildTestApp (
  t: Cleanup,
  env: NodeJS.ProcessEnv = {},
  options: BuildOptions = {},
  configure: (config: Config) => Config = (config) => config
): Promise<FastifyInstance> {
  // Last in, first out: the app closes before its PostgreSQL schema is dropped (t.after runs in order).
  const cleanup = cleanupStack(t)
  const database = process.env.TEST_APP_STORE === 'postgres' &&
    env.DATABASE_URL === undefined
    ? scratchDatabaseUrl(cleanup).url
    : ':memory:'
  // Load shedding off unless a test sets it: on a busy CI machine an event-loop lag past the
  // threshold would turn any test's request into a 503 (the child-process helper does the same).
  const config = configure(
    loadConfig({
      DATABASE_URL: database,
      API_TOKENS: TOKEN,
      LOG_LEVEL: 'silent',
      MAX_EVENT_LOOP_DELAY_MS: '0',
      ...env
    }))
  // Webhook deliveries of any test app stay on loopback (the network rule for tests).
  const app = await buildApp(config, { webhookRequest: loopbackOnlyRequest, ...options })
  cleanup.after(async () => { await app.close() })
  await app.ready()
  return app
}

/** Keeps every log line an app writes: pass `stream` as buildTestApp's `logStream`; `text()` is all of it so far. */
export function captureLog (): { stream: NonNullable<BuildOptions['logStream']>, text: () => string } {
  let log = ''
  return { stream: { write: (line: string) => { log += line } }, text: () => log }
}
