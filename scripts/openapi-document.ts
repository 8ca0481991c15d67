import { buildApp } from '../src/main/app.js'
import { loadConfig } from '../src/config/load-config.js'

/**
 * The OpenAPI document exactly as the service serves it at `GET /openapi.json`, read through
 * `inject` from an app on an in-memory database: no port, no network. Load shedding is off: a busy
 * machine must not turn the document into a 503.
 */
export async function servedOpenApiDocument (): Promise<Record<string, unknown>> {
  const app = await buildApp(loadConfig({
    DATABASE_URL: ':memory:',
    API_TOKENS: 'openapi-document-token-0123456789abcdef',
    LOG_LEVEL: 'silent',
    MAX_EVENT_LOOP_DELAY_MS: '0'
  }))
  try {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' })
    if (res.statusCode !== 200) throw new Error(`GET /openapi.json answered ${res.statusCode}`)
    return res.json<Record<string, unknown>>()
  } finally {
    await app.close()
  }
}
