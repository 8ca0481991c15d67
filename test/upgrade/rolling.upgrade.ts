import assert from 'node:assert/strict'
import { dirname } from 'node:path'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { cleanupStack } from '../helpers/cleanup.js'
import { adminQuery, directUrl, scratchDatabaseUrl, TEST_DATABASE_URL } from '../helpers/postgres.js'
import { CURRENT_SERVER_JS, previousRelease } from '../helpers/previous-release.js'
import { startServer, type ServerProcess } from '../helpers/server-process.js'
import { startReceiver, until, verifyWebhook, type WebhookReceiver } from '../helpers/webhook-receiver.js'
import { subscribe, type EventBody } from '../helpers/webhook-http.js'
import { RollingService, serverErrors, type Build, type Instance } from './rolling-load.js'

/**
 * Issue 52: an upgrade the way the shipped Deployment makes it (RollingUpdate, maxSurge 1,
 * maxUnavailable 0), on PostgreSQL, with the previous release built from this repository's history
 * (test/upgrade/previous-release.json) beside this build: `npm run test:upgrade` (CI runs it). Its
 * own file pattern keeps it out of npm test: it builds the previous release and runs for a minute.
 */
const CLIENTS = 5
/** How long the load runs between two steps of the rollout. */
const PHASE_MS = 10_000
/** Bounds on waits that only a broken service would reach: never what the test measures. */
const READY_TIMEOUT_MS = 60_000
const EVENTS_TIMEOUT_MS = 120_000

interface Running {
  instance: Instance
  server: ServerProcess
}

test('rolling upgrade on PostgreSQL: the previous release and this build side by side under write load, ' +
  'no 5xx, no acknowledged write lost, idempotency keys answered the same by both, every event delivered',
{ skip: TEST_DATABASE_URL === undefined && 'TEST_DATABASE_URL is not set', timeout: 900_000 }, async (t) => {
  const began = Date.now()
  const release = previousRelease()
  t.diagnostic(`previous release ${release.commit}: ${release.built ? 'built' : 'already built'} in ${release.dir} ` +
    `(${release.install}) in ${((Date.now() - began) / 1000).toFixed(1)} s`)
  // When each step of the rollout was done, in seconds since the previous release was ready: told, never asserted.
  const timeline: string[] = []
  let since = Date.now()
  const mark = (what: string): void => { timeline.push(`${what} ${((Date.now() - since) / 1000).toFixed(1)}`) }
  const cleanup = cleanupStack(t)
  const { url, schema } = scratchDatabaseUrl(cleanup)
  const receiver = await startReceiver(cleanup)
  const service = new RollingService()
  const servers = new Map<Instance, ServerProcess>()
  // PG_POOL_MAX 4: up to four instances at once stay well inside the test server's connections.
  const env = {
    DATABASE_URL: url,
    DATABASE_DIRECT_URL: directUrl(url),
    PG_POOL_MAX: '4',
    WEBHOOK_ALLOW_PRIVATE_URLS: '1',
    LOG_LEVEL: 'warn'
  }
  const start = async (name: string, build: Build): Promise<Running> => {
    const serverJs = build === 'previous' ? release.serverJs : CURRENT_SERVER_JS
    const server = await startServer(cleanup, {
      env,
      command: { file: process.execPath, args: [serverJs], cwd: dirname(serverJs) },
      startTimeoutMs: READY_TIMEOUT_MS
    })
    // The balancer sends traffic only once the readiness probe says so.
    await until(`${name} is ready`, async () => (await fetch(`${server.baseUrl}/health/ready`)).status === 200,
      READY_TIMEOUT_MS)
    const instance = service.join(name, build, server.baseUrl)
    servers.set(instance, server)
    return { instance, server }
  }
  const stop = async ({ instance, server }: Running): Promise<void> => {
    await service.leave(instance)
    assert.equal(await server.stop(), 0, `${instance.name} stops cleanly:\n${server.stdout()}${server.stderr()}`)
  }
  const phase = async (what: string, done: () => boolean): Promise<void> => {
    await sleep(PHASE_MS)
    await until(what, done, READY_TIMEOUT_MS)
  }
  const createdBy = (build: Build): number => [...service.created.values()].filter(
    (created) => created.by.build === build).length

  // 1. The previous release, two instances on the empty schema (they migrate it), and a subscription to every event.
  const [old1, old2] = await Promise.all([start('old-1', 'previous'), start('old-2', 'previous')]) as [Running, Running]
  const subscription = await subscribe(old1.instance.baseUrl, `${receiver.origin}/hooks`)
  const before = await schemaObjects(schema)
  since = Date.now()
  // 2. The write load, for the whole rollout.
  const load = service.startLoad(CLIENTS)
  await phase('the previous release acknowledged creates', () => createdBy('previous') > 0)
  // 3. The surge: this build starts beside them, migrates the schema, and joins once ready.
  const new1 = await start('new-1', 'current')
  mark('new-1 ready')
  const changed = diff(before, await schemaObjects(schema))
  t.diagnostic(
    'what this build changed in the ' +
      `previous release's schema: ${changed.length === 0 ? 'nothing' : changed.join(', ')}`)
  await phase('this build acknowledged creates', () => createdBy('current') > 0)
  // Keys each build created, replayed on the other while both serve.
  const crossed = [await service.replayAcross(new1.instance), await service.replayAcross(old1.instance)]
  mark('replayed across')
  // 4. One old instance out and stopped while the second new one starts; then the other old one.
  const [, new2] = await Promise.all([stop(old1), start('new-2', 'current')])
  mark('old-1 stopped, new-2 ready')
  await sleep(PHASE_MS)
  await service.leave(old2.instance)
  // Every key the previous release ever created, on this build; this build's so far, on the previous release.
  crossed.push(await service.replayAcross(new2.instance), await service.replayAcross(old2.instance))
  await stop(old2)
  mark('replayed across, old-2 stopped')
  await sleep(PHASE_MS)
  // 5. The load stops; every acknowledged write is checked on this build, and its event awaited.
  await load.stop()
  mark('load stopped')
  await service.checkWrites(new2.instance)
  mark('writes checked')
  const expected = new Set([
    ...[...service.created.keys()].map((id) => `plant.created ${id}`),
    ...[...service.deleted].map((id) => `plant.deleted ${id}`)
  ])
  const delivered = await deliveredEvents(receiver, subscription.secret, expected)
  mark('events delivered')
  await Promise.all([stop(new1), stop(new2)])
  mark('new-1 and new-2 stopped')
  t.diagnostic(`timeline (s): ${timeline.join(', ')}`)

  const instances = [...service.instances].sort((x, y) => x.name.localeCompare(y.name))
  t.diagnostic(`requests per instance: ${instances.map((i) => `${i.name} ${i.requests}`).join(', ')}; ` +
    `5xx: ${instances.map((i) => `${i.name} ${serverErrors(i)}`).join(', ')}; ` +
    `writes checked: ${service.created.size} creates (${createdBy('previous')} by the previous release), ` +
    `${service.deleted.size} deletes; idempotency keys replayed: ${service.replays.crossBuild} across builds ` +
    `(explicit rounds ${crossed.join(' + ')}), ${service.replays.sameBuild} on the same build; ` +
    `events delivered: ${delivered.subjects.size} of ${expected.size} (${delivered.deliveries} deliveries, ` +
    `${delivered.deliveries - delivered.subjects.size} repeated); failures: ${service.failures.length}; ` +
    `run ${((Date.now() - began) / 1000).toFixed(1)} s`)

  assert.deepEqual(instances.map((i) => [i.name, serverErrors(i)]), instances.map((i) => [i.name, 0]),
    '5xx answers; what ' +
      `the instances logged:\n${instances.map((i) => `${i.name}: ${errorsLogged(servers.get(i))}`).join('\n')}`)
  assert.deepEqual(service.failures.slice(0, 20), [], `${service.failures.length} failures`)
  assert.ok(createdBy('previous') > 0 && createdBy('current') > 0, 'both builds acknowledged creates')
  // Every key the previous release created answered the same on this build, and the other way round.
  const keyed = [...service.created.values()].filter((created) => created.key !== undefined)
  assert.deepEqual(keyed.filter((created) => created.by.build === 'previous' && !created.replayedOn.has('current')), [])
  assert.ok(keyed.some((created) => created.by.build === 'current' && created.replayedOn.has('previous')),
    'a key this build created was replayed on the previous release')
  assert.deepEqual([...expected].filter((subject) => !delivered.subjects.has(subject)), [], 'events never delivered')
  assert.deepEqual([...delivered.subjects.keys()].filter((subject) => !expected.has(subject)), [],
    'events of no acknowledged write')
  // At least once, but one event per write: every delivery of a write carries the same webhook-id.
  assert.deepEqual([...delivered.subjects].filter(([, ids]) => ids.size !== 1), [], 'writes with more than one event')
})

/** How many errors (log level 50 and up) an instance logged, and the first few's messages. */
function errorsLogged (server: ServerProcess | undefined): string {
  const errors = (server?.stdout() ?? '').split('\n').filter((line) => /^\{.*"level":[56]\d/.test(line))
    .map((line) => JSON.parse(line) as { msg?: string, err?: { type?: string, message?: string } })
  const first = errors.slice(0, 3).map(({ msg, err }) => `  ${msg ?? ''}: ${err?.type ?? ''} ${err?.message ?? ''}`)
  return [`${errors.length} errors logged`, ...first].join('\n')
}

/** Every column, constraint, index and function of the schema, as `kind table.name`. */
async function schemaObjects (schema: string): Promise<Set<string>> {
  const rows = await adminQuery<{ object: string }>(`
    SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type AS object
      FROM information_schema.columns WHERE table_schema = $1
    UNION ALL SELECT 'constraint ' || conrelid::regclass::text || '.' || conname FROM pg_constraint
      WHERE connamespace = $1::regnamespace
    UNION ALL SELECT 'index ' || indexname FROM pg_indexes WHERE schemaname = $1
    UNION ALL SELECT 'function ' || proname FROM pg_proc WHERE pronamespace = $1::regnamespace`, [schema])
  return new Set(rows.map((row) => row.object))
}

function diff (before: Set<string>, after: Set<string>): string[] {
  return [
    ...[...after].filter((object) => !before.has(object)).map((object) => `+${object}`),
    ...[...before].filter((object) => !after.has(object)).map((object) => `-${object}`)
  ].sort()
}

/**
 * Waits (bounded) until the receiver has every expected event; each delivery verified as a receiver
 * would. Returns the webhook-ids seen for each `type id`, and how many deliveries arrived.
 */
async function deliveredEvents (
  receiver: WebhookReceiver, secret: string, expected: Set<string>
): Promise<{ subjects: Map<string, Set<string>>, deliveries: number }> {
  const subjects = new Map<string, Set<string>>()
  let read = 0
  const take = (): boolean => {
    for (; read < receiver.requests.length; read++) {
      const request = receiver.requests[read]
      if (request === undefined) break
      const event = verifyWebhook(secret, request) as EventBody
      const subject = `${event.type} ${String(event.data.id)}`
      subjects.set(subject, (subjects.get(subject) ?? new Set()).add(String(request.headers['webhook-id'])))
    }
    return [...expected].every((subject) => subjects.has(subject))
  }
  await until(`the receiver has all ${expected.size} events`, take, EVENTS_TIMEOUT_MS).catch(() => {})
  return { subjects, deliveries: read }
}
