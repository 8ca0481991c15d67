// This process runs Newman: a connection anywhere but loopback fails the run (see offline-guard.ts).
import './offline-guard.js'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import newman, { type NewmanRunSummary } from 'newman'
import { TOKEN } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'

/**
 * The third-party contract test (`npm run test:contract`): Portman turns the OpenAPI document the
 * real server serves into a Postman collection with contract tests (status, content type, JSON body,
 * schema, required headers) and variation tests (no token, a wrong token, a plant or a webhook
 * subscription gone after its delete), following test/contract/portman-config.json; Newman runs it against the
 * server, started as a child process on 127.0.0.1 with a fresh database. Neither tool may reach the network.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const CONFIG = join(ROOT, 'test', 'contract')
const PORTMAN = join(ROOT, 'node_modules', '@apideck', 'portman', 'bin', 'portman')
const GUARD = new URL('./offline-guard.js', import.meta.url).href

/** Runs a command to its end; resolves with its exit code and everything it printed. */
async function run (command: string, args: string[], cwd: string): Promise<{ code: number | null, output: string }> {
  return await new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { PATH: process.env.PATH, NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, output }))
  })
}

async function runNewman (collection: unknown): Promise<NewmanRunSummary> {
  return await new Promise((resolve, reject) => {
    newman.run({
      collection: collection as string,
      envVar: [{ key: 'bearerToken', value: TOKEN }],
      reporters: ['cli'],
      reporter: { cli: { noBanner: true } },
      color: 'off',
      timeoutRequest: 10_000
    }, (err, summary) => { if (err !== null) reject(err); else resolve(summary) })
  })
}

test('Portman\'s contract and variation tests, made from the served OpenAPI document, all pass against the ' +
  'real server (Newman)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-contract-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  // A fresh database in the helper's own temporary directory, stopped when the test ends.
  //
  // Webhooks: the server must never try to deliver one, since it would connect to the subscription's
  // (public) address. Three layers keep it so:
  // - portman-config.json creates the subscription with a public IP literal (checked without DNS)
  //   and `disabled: true` (PATCH keeps it so): a disabled subscription gets no deliveries;
  // - the webhooks folder runs before the plants folder and ends with the subscription's DELETE,
  //   so no plant is ever written while a subscription exists;
  // - the server runs under the offline guard too: a connection anywhere but loopback would be
  //   refused before a socket is opened, and fail the test (its stderr is checked below).
  // WEBHOOK_ALLOW_PRIVATE_URLS stays unset: the default address policy is the one under test.
  // So the retry and the read of a delivery find none: both are pinned as 404s (the 202 is covered by
  // test/plugins/routes/webhooks/retry-delivery.test.ts, where the test network rule holds it).
  const server = await startServer(t, { env: { WEBHOOK_ALLOW_PRIVATE_URLS: undefined }, nodeArgs: ['--import', GUARD] })

  const document = await fetch(`${server.baseUrl}/openapi.json`)
  assert.equal(document.status, 200)
  writeFileSync(join(dir, 'openapi.json'), await document.text())

  // Portman writes ./tmp/ where it runs: in the scratch directory, never in the repository.
  const portman = await run(process.execPath, [
    '--import', GUARD, PORTMAN,
    '--local', join(dir, 'openapi.json'),
    '--baseUrl', server.baseUrl,
    '--portmanConfigFile', join(CONFIG, 'portman-config.json'),
    '--postmanConfigFile', join(CONFIG, 'postman-config.json'),
    '--output', join(dir, 'collection.json'),
    '--includeTests', 'true'
  ], dir)
  assert.equal(portman.code, 0, portman.output)
  assert.doesNotMatch(portman.output, /offline-guard/)

  const summary = await runNewman(JSON.parse(readFileSync(join(dir, 'collection.json'), 'utf8')))
  const failures = summary.run.failures.map((failure) => `${failure.source?.name ?? '?'}: ${failure.error.message}`)
  assert.deepEqual(failures, [])
  assert.doesNotMatch(server.stderr(), /offline-guard/)

  // The webhooks flow ran first, in order (its subscription deleted before any plant write), then the
  // plants flow, then every unauthorized variation and the read after each delete.
  const unauthorized = (requests: string[]): string[] =>
    requests.flatMap((request) => [`${request}[Without a token]`, `${request}[With a wrong token]`])
  const webhookRequests = ['GET List webhook event types', 'HEAD List webhook event types: headers only',
    'POST Create a webhook subscription', 'GET Get a webhook subscription',
    'HEAD Get a webhook subscription: headers only',
    'GET List webhook subscriptions', 'HEAD List webhook subscriptions: headers only',
    'PATCH Update a webhook subscription',
    'POST Rotate a webhook secret', 'GET Get a webhook secret', 'HEAD Get a webhook secret: headers only',
    'GET List webhook deliveries', 'HEAD List webhook deliveries: headers only', 'POST Retry a webhook delivery',
    'GET Get a webhook delivery', 'HEAD Get a webhook delivery: headers only', 'POST Recover failed webhook deliveries',
    'DELETE Delete a webhook subscription', 'POST Send a test event']
  const plantRequests = ['POST Create a plant', 'GET Get a plant', 'HEAD Get a plant: headers only', 'GET List plants',
    'HEAD List plants: headers only',
    'PUT Replace a plant', 'PATCH Update a plant', 'DELETE Delete a plant']
  const executed = summary.run.executions.map((execution) => `${execution.request.method} ${execution.item.name}`)
  assert.deepEqual(executed, [
    'GET Service health',
    'HEAD Service health: headers only',
    'GET Liveness probe',
    'HEAD Liveness probe: headers only',
    'GET Readiness probe',
    'HEAD Readiness probe: headers only',
    ...webhookRequests,
    ...plantRequests,
    ...unauthorized(plantRequests),
    'GET Get a plant[After it was deleted]',
    ...unauthorized(webhookRequests),
    'GET Get a webhook subscription[After it was deleted]'
  ])
  const statuses = summary.run.executions.map(
    (execution) => (execution.response as { code?: number } | undefined)?.code)
  assert.deepEqual(statuses, [
    ...Array<number>(6).fill(200),
    // The retry and the delivery's read find no delivery (see above): 404. The test event is sent
    // after the subscription's DELETE (a 404), so nothing ever connects to its public address.
    200, 200, 201, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 404, 404, 404, 202, 204, 404,
    201, 200, 200, 200, 200, 200, 200, 204,
    ...Array<number>(16).fill(401), 404,
    ...Array<number>(38).fill(401), 404
  ])
  const { assertions } = summary.run.stats
  assert.equal(assertions.failed, 0)
  assert.ok((assertions.total ?? 0) >= 100, `${assertions.total ?? 0} assertions ran`)
})
