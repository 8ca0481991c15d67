import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test, type TestContext } from 'node:test'
import pg from 'pg'
import { parsePostgresUrl } from '../../../src/store/postgres/connection.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { createPostgresWebhookStore, postgresEnqueuer } from '../../../src/store/postgres/webhook-store.js'
import { WEBHOOK_CHANNEL } from '../../../src/store/postgres/webhook-sql.js'
import { WebhookDispatcher, type DispatcherOptions } from '../../../src/webhooks/dispatcher.js'
import { PLANTS } from '../../../src/resources/plants.js'
import { resourceEvent } from '../../../src/webhooks/events.js'
import type { ResourceEvent } from '../../../src/webhooks/events.js'
import { WebhookService } from '../../../src/webhooks/service.js'
import type { WebhookStore, WebhookSubscription } from '../../../src/webhooks/store-contract.js'
import type { AddressPolicy } from '../../../src/webhooks/url-policy.js'
import {
  directUrl, scratchDatabaseUrl, terminateSessions, TEST_DATABASE_URL,
  withApplicationName
} from '../../helpers/postgres.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { PLANT_CREATED, PLANT_DELETED, RESOURCE_EVENT_TYPES } from '../../helpers/resources.js'
import { startReceiver, until, verifyWebhook, type WebhookReceiver } from '../../helpers/webhook-receiver.js'
import { plant } from './store-conformance.js'

// Several instances on one PostgreSQL schema; deliveries go to a receiver on 127.0.0.1 only.

const OWNER = 'a'.repeat(64)
const loopback: AddressPolicy = {
  allowPrivate: true,
  resolve: async () => { throw new Error('no DNS in these tests') }
}
const serviceOf = (store: WebhookStore): WebhookService =>
  new WebhookService({ store, policy: loopback, lookupTimeoutMs: 2000, eventTypes: RESOURCE_EVENT_TYPES })

interface Cluster {
  url: string
  receiver: WebhookReceiver
  /** Opens a webhook store: one per instance. */
  openStore: (applicationName?: string) => Promise<WebhookStore>
  dispatcher: (store: WebhookStore, options?: Partial<DispatcherOptions>) => WebhookDispatcher
  /** Commits (or rolls back) a plant event the way a plant write will: in a transaction of its own connection. */
  publish: (event: ResourceEvent, commit?: boolean) => Promise<number>
}

async function cluster (t: TestContext): Promise<Cluster> {
  const cleanup = cleanupStack(t)
  const { url, schema } = scratchDatabaseUrl(cleanup)
  const plants = await createPostgresStore({ url, poolMax: 1 })
  cleanup.after(() => plants.close())
  const receiver = await startReceiver(cleanup)
  const openStore = async (applicationName?: string): Promise<WebhookStore> => {
    const named = applicationName === undefined ? url : withApplicationName(url, applicationName)
    const store = await createPostgresWebhookStore({
      url: named,
      listenUrl: directUrl(named),
      poolMax: 3,
      onError: () => {}
    })
    cleanup.after(() => store.close())
    return store
  }
  const dispatcher = (store: WebhookStore, options: Partial<DispatcherOptions> = {}): WebhookDispatcher => {
    const instance = new WebhookDispatcher({
      store,
      policy: loopback,
      pollIntervalMs: 20,
      schedule: [30],
      jitter: 0,
      timeoutMs: 2000,
      ...options
    })
    cleanup.after(async () => { await instance.stop(0) })
    return instance
  }
  const publish = async (event: ResourceEvent, commit = true): Promise<number> => {
    const client = new pg.Client({ connectionString: parsePostgresUrl(url).connectionString })
    await client.connect()
    try {
      await client.query(`BEGIN; SELECT set_config('search_path', '${schema}', true)`)
      const count = await postgresEnqueuer(schema)(client, event, Date.now(), true)
      await client.query(commit ? 'COMMIT' : 'ROLLBACK')
      return count
    } finally {
      await client.end()
    }
  }
  return { url, receiver, openStore, dispatcher, publish }
}

if (TEST_DATABASE_URL !== undefined) {
  describe('webhook dispatchers on PostgreSQL', () => {
    test('two instances deliver everything, each delivery claimed and sent exactly once', async (t) => {
      const { receiver, openStore, dispatcher, publish } = await cluster(t)
      const [storeA, storeB] = [await openStore(), await openStore()]
      const service = serviceOf(storeA)
      const subscriptions: WebhookSubscription[] = []
      for (let i = 0; i < 4; i++) {
        subscriptions.push(await service.createSubscription(OWNER, { url: `${receiver.origin}/s${i}` }))
      }
      receiver.respond(async (_request, res) => {
        await new Promise((resolve) => setTimeout(resolve, 2))
        res.writeHead(200).end()
      })
      const a = dispatcher(storeA, { concurrency: 4, perSubscription: 2 })
      const b = dispatcher(storeB, { concurrency: 4, perSubscription: 2 })
      const byInstance = { a: 0, b: 0 }
      a.on('attempt', () => { byInstance.a++ })
      b.on('attempt', () => { byInstance.b++ })
      await Promise.all([a.start(), b.start()])
      for (let i = 1; i <= 50; i++) await publish(resourceEvent(PLANTS, 'created', plant(BigInt(i))))
      await receiver.waitFor(200, 20_000)
      await until('every delivery recorded', async () => {
        for (const { id } of subscriptions) {
          const { deliveries } = await service.listDeliveries(OWNER, id, { limit: 100 })
          if (deliveries.length !== 50 || deliveries.some((d) => d.status !== 'succeeded')) return false
        }
        return true
      })
      await new Promise((resolve) => setTimeout(resolve, 100))
      const sent = receiver.requests.map((r) => `${r.url} ${String(r.headers['webhook-id'])}`)
      assert.equal(sent.length, 200, 'nothing sent twice')
      assert.equal(new Set(sent).size, 200)
      assert.equal(byInstance.a + byInstance.b, 200)
      assert.ok(byInstance.a > 0 && byInstance.b > 0, `both instances worked (${byInstance.a} + ${byInstance.b})`)
      for (const { id } of subscriptions) {
        const { deliveries } = await service.listDeliveries(OWNER, id, { limit: 100 })
        assert.ok(deliveries.every((d) => d.attempts === 1))
      }
      const [first] = receiver.requests
      const owner = subscriptions.find((s) => first?.url === new URL(s.url).pathname)
      assert.ok(first !== undefined && owner !== undefined)
      verifyWebhook(owner.secret, first)
    })

    test('a committed event reaches an idle instance at once through LISTEN/NOTIFY; a rolled-back one ' +
      'never', async (t) => {
      const { receiver, openStore, dispatcher, publish } = await cluster(t)
      const store = await openStore()
      await serviceOf(store).createSubscription(OWNER, { url: `${receiver.origin}/hooks` })
      // No poll to speak of: only the notification can wake it.
      const idle = dispatcher(store, { pollIntervalMs: 60_000 })
      await idle.start()
      await new Promise((resolve) => setTimeout(resolve, 50))
      assert.equal(await publish(resourceEvent(PLANTS, 'deleted', plant(1n)), false), 1)
      const started = Date.now()
      assert.equal(await publish(resourceEvent(PLANTS, 'created', plant(2n))), 1)
      const [request] = await receiver.waitFor(1, 2000)
      assert.ok(Date.now() - started < 1000, `delivered ${Date.now() - started} ms after the commit`)
      assert.match(request?.body ?? '', /^\{"type":"plant\.created",/)
      await new Promise((resolve) => setTimeout(resolve, 100))
      assert.equal(receiver.requests.length, 1, 'the rolled-back event was never written')
    })

    test('plant writes wake their own process\'s dispatcher after every commit with deliveries, and NOTIFY ' +
      'other instances at most once per interval', async (t) => {
      const cleanup = cleanupStack(t)
      const { url, schema } = scratchDatabaseUrl(cleanup)
      const plants = await createPostgresStore({ url, directUrl: directUrl(url), notifyIntervalMs: 60_000 })
      cleanup.after(() => plants.close())
      const subscription = await serviceOf(plants.webhooks)
        .createSubscription(OWNER, { url: 'http://127.0.0.1:9/hooks', events: [PLANT_CREATED, PLANT_DELETED] })
      assert.ok(subscription.id > 0n)
      // Another instance, as PostgreSQL tells it: a LISTEN of its own.
      const other = new pg.Client({ connectionString: parsePostgresUrl(directUrl(url)).connectionString })
      await other.connect()
      cleanup.after(async () => { await other.end() })
      const notified: string[] = []
      other.on('notification', (message) => { if (message.payload === schema) notified.push(message.channel) })
      await other.query(`LISTEN ${WEBHOOK_CHANNEL}`)
      let wakes = 0
      const unlisten = await plants.webhooks.listen?.(() => { wakes++ })
      cleanup.after(async () => { await unlisten?.() })
      await until('the listener is connected', () => wakes === 1)

      const created = await Promise.all(
        Array.from({ length: 6 }, async (_, i) => await plants.plants.create({ name: `plant ${i}` })))
      const renamed = await plants.plants.update(created[0]?.item.id ?? 0n, { name: 'renamed' })
      assert.equal(renamed.name, 'renamed')
      await plants.plants.delete(created[1]?.item.id ?? 0n)
      // Six creates and a delete wrote deliveries (an update is not subscribed to): one wake each, at
      // once after its commit; and the one notification, which this store's own listener hears too.
      assert.ok(wakes >= 1 + 7, `woken ${wakes} times`)
      await until('both listeners heard the notification', () => notified.length > 0 && wakes === 1 + 7 + 1)
      await new Promise((resolve) => setTimeout(resolve, 100))
      assert.deepEqual(notified, [WEBHOOK_CHANNEL], 'one notification for seven events within the interval')
      assert.equal(wakes, 1 + 7 + 1)
    })

    test('a lost listener connection is made again, and what was enqueued meanwhile is delivered', async (t) => {
      const { receiver, openStore, dispatcher, publish } = await cluster(t)
      const applicationName = `plant-store-test-${randomBytes(4).toString('hex')}`
      const store = await openStore(applicationName)
      await serviceOf(store).createSubscription(OWNER, { url: `${receiver.origin}/hooks` })
      const idle = dispatcher(store, { pollIntervalMs: 60_000 })
      await idle.start()
      assert.ok(await terminateSessions(applicationName, { listening: true }) >= 1, 'the listener was cut off')
      await publish(resourceEvent(PLANTS, 'created', plant(1n)))
      await receiver.waitFor(1, 5000)
      await publish(resourceEvent(PLANTS, 'updated', plant(1n)))
      await receiver.waitFor(2, 2000)
    })
  })
}
