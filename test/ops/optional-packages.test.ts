import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { TOKEN } from '../helpers/app.js'

const APP_JS = fileURLToPath(new URL('../../src/main/app.js', import.meta.url))
const LOAD_CONFIG_JS = fileURLToPath(new URL('../../src/config/load-config.js', import.meta.url))

/**
 * Builds the app in a fresh process with `env` and lists the packages of interest it loaded (every
 * one of them is CommonJS, so each module it loaded is in the require cache).
 */
async function packagesLoaded (env: Record<string, string>): Promise<string[]> {
  const script = `
    import { createRequire } from 'node:module'
    const { buildApp } = await import(${JSON.stringify(APP_JS)})
    const { loadConfig } = await import(${JSON.stringify(LOAD_CONFIG_JS)})
    const app = await buildApp(loadConfig(
      ${JSON.stringify({ DATABASE_URL: ':memory:', API_TOKENS: TOKEN, LOG_LEVEL: 'silent', ...env })}))
    await app.ready()
    const names = new Set()
    for (const file of Object.keys(createRequire(import.meta.url).cache)) {
      const match = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(file)
      if (match && /^(prom-client|@opentelemetry\\/|@fastify\\/otel)/.test(match[1])) names.add(match[1])
    }
    await app.close()
    process.stdout.write(JSON.stringify([...names].sort()))
  `
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    env: {
      PATH: process.env.PATH,
      ...(process.env.NODE_V8_COVERAGE !== undefined && { NODE_V8_COVERAGE: process.env.NODE_V8_COVERAGE })
    }
  })
  return JSON.parse(stdout) as string[]
}

test('with METRICS_PORT and OTEL_EXPORTER_OTLP_ENDPOINT unset, neither prom-client nor any ' +
  'OpenTelemetry package is loaded', async () => {
  assert.deepEqual(await packagesLoaded({}), [])
})

test('METRICS_PORT loads prom-client (and no tracing SDK); OTEL_EXPORTER_OTLP_ENDPOINT loads the SDK, the ' +
  'exporter and @fastify/otel', async () => {
  const metrics = await packagesLoaded({ METRICS_PORT: '0' })
  assert.ok(metrics.includes('prom-client'), metrics.join(', '))
  assert.ok(!metrics.includes('@opentelemetry/sdk-node'))
  const tracing = await packagesLoaded({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })
  for (const name of ['@opentelemetry/sdk-node', '@opentelemetry/exporter-trace-otlp-http', '@fastify/otel']) {
    assert.ok(tracing.includes(name), name)
  }
  assert.ok(!tracing.includes('prom-client'))
})
