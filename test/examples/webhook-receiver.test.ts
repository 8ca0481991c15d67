import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { freePort } from '../helpers/ports.js'
import { startServer } from '../helpers/server-process.js'
import { until } from '../helpers/webhook-receiver.js'
import { callOk, subscribe, untilDeliveries } from '../helpers/webhook-http.js'
import type { DeliveryBody } from '../helpers/webhooks.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/**
 * The receiver's command exactly as docs/webhooks.md gives it (`WEBHOOK_SECRET=… PORT=4000 node
 * dist/examples/webhook-receiver.js`), run from the root as a user would after `npm run build`.
 */
const documented = ((): { script: string } => {
  const page = readFileSync(join(ROOT, 'docs/webhooks.md'), 'utf8')
  const match = /^WEBHOOK_SECRET=whsec_… PORT=4000 node (\S+)$/m.exec(page)
  if (match?.[1] === undefined) throw new Error('docs/webhooks.md no longer gives the receiver\'s command')
  return { script: match[1] }
})()
const EXAMPLE = join(ROOT, documented.script)

test('docs/webhooks.md starts the receiver from what `npm run build` compiles', () => {
  assert.equal(documented.script, 'dist/examples/webhook-receiver.js')
  const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as {
    include: string[],
    compilerOptions: { outDir: string }
  }
  assert.equal(build.compilerOptions.outDir, 'dist')
  assert.ok(build.include.includes('examples'))
  assert.ok(existsSync(EXAMPLE), `${EXAMPLE} is missing: npm test runs npm run build first`)
})

test('examples/webhook-receiver.ts verifies, prints and de-duplicates the events of a real server, every type the ' +
  'catalog lists, and refuses a forged signature with 401', { timeout: 60_000 }, async (t) => {
  const server = await startServer(t, { env: { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_POLL_INTERVAL_MS: '100' } })
  const base = server.baseUrl
  // The subscription's secret is what the receiver is started with: subscribe its URL first.
  const port = await freePort()
  const subscription = await subscribe(base, `http://127.0.0.1:${port}/`)

  const child = spawn(process.execPath, [EXAMPLE], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, PORT: String(port), WEBHOOK_SECRET: subscription.secret },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve))
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
  })
  const lines = (): string[] => stdout.split('\n').filter((line) => line !== '')
  const untilLines = async (count: number): Promise<string[]> => {
    await until(`the receiver printed ${count} lines (so far: ${JSON.stringify(stdout)}${stderr})`,
      () => lines().length >= count, 15_000)
    return lines()
  }
  assert.deepEqual(await untilLines(1), [`listening on http://127.0.0.1:${port}/`])

  const plant = await callOk<{ id: number }>(201, base, 'POST', '/plants', { name: 'Boston fern', tag: 'fern' })
  await untilLines(2)
  await callOk(200, base, 'PATCH', `/plants/${plant.id}`, { name: 'Sword fern', tag: null })
  await untilLines(3)
  await callOk(204, base, 'DELETE', `/plants/${plant.id}`)
  const printed = await untilLines(4)
  const messageId = /\((msg_[\w-]+)\)$/
  assert.match(printed[1] ?? '', /^plant\.created #1 Boston fern \[fern\] \(msg_[\w-]+\)$/)
  assert.match(printed[2] ?? '', /^plant\.updated #1 Sword fern \(msg_[\w-]+\)$/)
  assert.match(printed[3] ?? '', /^plant\.deleted #1 Sword fern \(msg_[\w-]+\)$/)
  const ids = printed.slice(1).map((line) => messageId.exec(line)?.[1])
  assert.equal(new Set(ids).size, 3, 'one webhook-id per event')

  // Every delivery succeeded: the receiver answered 2xx to each.
  const list = await untilDeliveries(base, subscription.id, 'all three delivered',
    (all) => all.length === 3 && all.every((delivery) => delivery.status === 'succeeded'))
  assert.deepEqual(list.map((delivery) => delivery.eventType), ['plant.deleted', 'plant.updated', 'plant.created'])

  // The same event delivered again (a retry asked for through the API): the same webhook-id, handled once.
  const created = list[2] as DeliveryBody
  await callOk(202, base, 'POST', `/webhooks/${subscription.id}/deliveries/${created.id}/retry`)
  assert.equal((await untilLines(5))[4], `duplicate ${ids[0]}: already handled`)
  await untilDeliveries(base, subscription.id, 'the retry recorded as a success', (all) =>
    all.find((delivery) => delivery.id === created.id)?.attempts === 2 &&
      all.every((delivery) => delivery.status === 'succeeded'))

  // A forged request: a signature made with another key.
  const forged = await fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': 'msg_forged',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': `v1,${Buffer.alloc(32, 7).toString('base64')}`
    },
    body: JSON.stringify({ type: 'plant.deleted', timestamp: new Date().toISOString(), data: { id: 2, name: 'x' } })
  })
  assert.equal(forged.status, 401)
  assert.equal((await untilLines(6))[5], 'refused msg_forged: No matching signature found')

  // The test event carries no plant: `data` names the subscription.
  const tested = await callOk<{ succeeded: boolean, webhookId: string }>(200, base, 'POST',
    `/webhooks/${subscription.id}/test`)
  assert.equal(tested.succeeded, true)
  assert.equal((await untilLines(7))[6], `webhook.test for subscription #${subscription.id} (${tested.webhookId})`)

  // Every event type the service lists was received and printed.
  const catalog = await callOk<Array<{ type: string }>>(200, base, 'GET', '/webhooks/event-types')
  const printedTypes = new Set(
    lines().slice(1).map((line) => /^([a-z]+\.[a-z]+) /.exec(line)?.[1]).filter((type) => type !== undefined))
  assert.deepEqual([...printedTypes].sort(), catalog.map(({ type }) => type).sort())

  child.kill('SIGTERM')
  assert.equal(await exited, 0)
  assert.equal(stderr, '')
  assert.equal(lines().length, 7, 'nothing else printed')
})

test('the receiver example refuses a secret that cannot verify anything, saying why', async () => {
  // Not whsec_, not base64, too short, too long: no subscription has such a secret.
  for (const secret of ['nope', 'whsec_nope', 'whsec_not base64 at all, not at all!!',
    `whsec_${Buffer.alloc(23, 1).toString('base64')}`,
    `whsec_${Buffer.alloc(65, 1).toString('base64')}`]) {
    await assert.rejects(
      promisify(execFile)(process.execPath, [EXAMPLE],
        { env: { PATH: process.env.PATH, WEBHOOK_SECRET: secret, PORT: '0' }, timeout: 10_000 }),
      (err: { code?: number, stdout?: string, stderr?: string }) => {
        assert.equal(err.code, 2, secret)
        assert.equal(err.stdout, '', secret)
        assert.equal(err.stderr,
          'WEBHOOK_SECRET is not a subscription\'s secret: whsec_ and 24 to 64 bytes in base64 ' +
          '(the `secret` of the answer to POST /webhooks, or GET /webhooks/{id}/secret)\n', secret)
        return true
      }
    )
  }
})

test('the receiver example refuses to run without a secret, saying why', async () => {
  await assert.rejects(
    promisify(execFile)(process.execPath, [EXAMPLE], { env: { PATH: process.env.PATH } }),
    (err: { code?: number, stderr?: string }) => {
      assert.equal(err.code, 2)
      assert.match(err.stderr ?? '', /Set WEBHOOK_SECRET/)
      return true
    }
  )
})
