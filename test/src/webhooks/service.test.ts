import { PLANTS } from '../../../src/resources/plants.js'
import { resourceEvent } from '../../../src/webhooks/events.js'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, test, type TestContext } from 'node:test'
import { isServiceError, type ErrorCode } from '../../../src/lib/errors.js'
import { WebhookService, webhookOwner } from '../../../src/webhooks/service.js'
import type { WebhookStore } from '../../../src/webhooks/store-contract.js'
import type { AddressPolicy, ResolvedAddress } from '../../../src/webhooks/url-policy.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import {
  PLANT_CREATED, PLANT_DELETED, PLANT_UPDATED, PLANTS_READ, RESOURCE_EVENT_TYPES
} from '../../helpers/resources.js'
import { sqliteWebhookDatabase } from '../../helpers/sqlite-webhooks.js'
import { plant } from './store-conformance.js'

// No connection is made here: host names resolve through a table.

const ALICE = webhookOwner('alice-token-0123456789abcdef0123456789')
const BOB = webhookOwner('bob-token-0123456789abcdef0123456789abc')

const ADDRESSES: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34'],
  'other.example.com': ['2606:2800:220:1:248:1893:25c8:1946'],
  'intranet.example.com': ['10.0.0.8']
}

interface Fixture {
  service: WebhookService
  store: WebhookStore
  lookups: string[]
  woken: () => number
}

async function setup (t: TestContext): Promise<Fixture> {
  const cleanup = cleanupStack(t)
  const store = sqliteWebhookDatabase(cleanup, 'plant-store-webhook-service-').openWebhookStore()
  const lookups: string[] = []
  const policy: AddressPolicy = {
    allowPrivate: false,
    resolve: async (hostname): Promise<ResolvedAddress[]> => {
      lookups.push(hostname)
      return (ADDRESSES[hostname] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
    }
  }
  let wakes = 0
  const service = new WebhookService({
    store, policy, lookupTimeoutMs: 2000, eventTypes: RESOURCE_EVENT_TYPES, onDue: () => { wakes++ }
  })
  return { service, store, lookups, woken: () => wakes }
}

async function rejectsWithCode (promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(isServiceError(err), `expected a ServiceError, got ${String(err)}`)
    assert.equal(err.code, code, err.message)
    return true
  })
}

describe('webhook service', () => {
  test('the owner is the hex SHA-256 of the token', () => {
    assert.equal(webhookOwner('t0k3n'), createHash('sha256').update('t0k3n').digest('hex'))
    assert.match(ALICE, /^[0-9a-f]{64}$/)
  })

  test('a new subscription: every event by default, enabled, a fresh whsec_ secret', async (t) => {
    const { service } = await setup(t)
    const subscription = await service.createSubscription(ALICE, { url: 'https://hooks.example.com/plants' })
    assert.equal(subscription.id, 1n)
    assert.deepEqual(subscription.events, RESOURCE_EVENT_TYPES)
    assert.equal(subscription.disabled, false)
    assert.match(subscription.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
    assert.equal('description' in subscription, false)
    const second = await service.createSubscription(ALICE, {
      url: 'https://other.example.com/',
      events: [PLANT_DELETED, PLANT_CREATED, PLANT_DELETED],
      description: 'audit',
      disabled: true
    })
    assert.deepEqual(second.events, [PLANT_CREATED, PLANT_DELETED], 'each once, in the canonical order')
    assert.equal(second.description, 'audit')
    assert.equal(second.disabled, true)
    assert.notEqual(second.secret, subscription.secret)
  })

  test('creation refuses bad input with a code, before anything is stored', async (t) => {
    const { service, lookups } = await setup(t)
    await rejectsWithCode(service.createSubscription(ALICE, { url: 'http://localhost:3000/' }), 'url-unresolvable')
    await rejectsWithCode(service.createSubscription(ALICE, { url: 'https://intranet.example.com/' }),
      'url-not-allowed')
    await rejectsWithCode(service.createSubscription(ALICE, { url: 'http://169.254.169.254/latest/meta-data/' }),
      'url-not-allowed')
    await rejectsWithCode(service.createSubscription(ALICE, { url: 'http://[::1]/' }), 'url-not-allowed')
    await rejectsWithCode(service.createSubscription(ALICE, { url: 'https://u:p@hooks.example.com/' }), 'invalid-url')
    await rejectsWithCode(service.createSubscription(ALICE, { url: 'hooks.example.com' }), 'invalid-url')
    await rejectsWithCode(service.createSubscription(ALICE, { url: 'https://hooks.example.com/', events: [] }),
      'invalid-events')
    await rejectsWithCode(
      service.createSubscription(ALICE, { url: 'https://hooks.example.com/', events: ['plant.eaten'] }),
      'invalid-events')
    await rejectsWithCode(
      service.createSubscription(ALICE, { url: 'https://hooks.example.com/', description: 'x'.repeat(501) }),
      'invalid-description')
    assert.deepEqual(lookups, ['localhost', 'intranet.example.com'], 'invalid input is refused before any lookup')
    assert.deepEqual((await service.listSubscriptions(ALICE, { limit: 10 })).subscriptions, [])
  })

  test("another owner's subscription is not found, whatever is asked of it", async (t) => {
    const { service } = await setup(t)
    const { id } = await service.createSubscription(ALICE, { url: 'https://hooks.example.com/' })
    await rejectsWithCode(service.getSubscription(BOB, id), 'not-found')
    await rejectsWithCode(service.updateSubscription(BOB, id, { disabled: true }), 'not-found')
    await rejectsWithCode(service.updateSubscription(BOB, id, { url: 'https://intranet.example.com/' }), 'not-found')
    await rejectsWithCode(service.deleteSubscription(BOB, id), 'not-found')
    await rejectsWithCode(service.rotateSecret(BOB, id), 'not-found')
    await rejectsWithCode(service.listDeliveries(BOB, id, { limit: 10 }), 'not-found')
    await rejectsWithCode(service.retryDelivery(BOB, id, 1n), 'not-found')
    assert.deepEqual((await service.listSubscriptions(BOB, { limit: 10 })).subscriptions, [])
    assert.equal((await service.getSubscription(ALICE, id)).disabled, false)
  })

  test('update: the URL is checked again when it changes, events and description validated', async (t) => {
    const { service, lookups } = await setup(t)
    const { id } = await service.createSubscription(ALICE, { url: 'https://hooks.example.com/' })
    lookups.length = 0
    await service.updateSubscription(ALICE, id, { url: 'https://hooks.example.com/', description: 'same URL' })
    assert.deepEqual(lookups, [], 'an unchanged URL is not looked up again')
    await rejectsWithCode(service.updateSubscription(ALICE, id, { url: 'https://intranet.example.com/' }),
      'url-not-allowed')
    await rejectsWithCode(service.updateSubscription(ALICE, id, { events: [] }), 'invalid-events')
    await rejectsWithCode(service.updateSubscription(ALICE, id, { description: 'x'.repeat(501) }),
      'invalid-description')
    const updated = await service.updateSubscription(ALICE, id,
      { url: 'https://other.example.com/', events: [PLANT_UPDATED], description: null })
    assert.equal(updated.url, 'https://other.example.com/')
    assert.deepEqual(updated.events, [PLANT_UPDATED])
    assert.equal('description' in updated, false)
    await service.deleteSubscription(ALICE, id)
    await rejectsWithCode(service.getSubscription(ALICE, id), 'not-found')
    await rejectsWithCode(service.deleteSubscription(ALICE, id), 'not-found')
  })

  test('rotation: a new secret, the old one still signing for 24 hours', async (t) => {
    const { service, store } = await setup(t)
    const { id, secret } = await service.createSubscription(ALICE, { url: 'https://hooks.example.com/' })
    const rotated = await service.rotateSecret(ALICE, id)
    assert.notEqual(rotated.secret, secret)
    await store.enqueue(resourceEvent(PLANTS, 'created', plant(1n)), Date.now())
    const claim = { lease: 'l', leaseMs: 1000, limit: 1, perSubscription: 1, skipSubscriptions: [] }
    const [now] = await store.claimDue({ ...claim, now: Date.now() })
    assert.deepEqual(now?.secrets, [rotated.secret, secret])
    await store.releaseDeliveries('l', [now?.id ?? 0n])
    const [tomorrow] = await store.claimDue({ ...claim, now: Date.now() + 24 * 3_600_000 + 1000 })
    assert.deepEqual(tomorrow?.secrets, [rotated.secret])
  })

  test('secrets: only creation, rotation and getSecret carry one; a supplied secret is checked', async (t) => {
    const { service } = await setup(t)
    const created = await service.createSubscription(ALICE, { url: 'https://hooks.example.com/' })
    assert.equal('secret' in await service.getSubscription(ALICE, created.id), false)
    assert.equal('secret' in await service.updateSubscription(ALICE, created.id, { description: 'd' }), false)
    assert.equal((await service.listSubscriptions(ALICE, { limit: 10 })).subscriptions.some((s) => 'secret' in s),
      false)
    assert.deepEqual(await service.getSecret(ALICE, created.id), { secret: created.secret })
    await rejectsWithCode(service.getSecret(BOB, created.id), 'not-found')
    const mine = `whsec_${Buffer.from(Array.from({ length: 40 }, (_, i) => i)).toString('base64')}`
    assert.equal((await service.rotateSecret(ALICE, created.id, mine)).secret, mine)
    for (const bad of ['whsec_', mine.slice(6), `whsec_${Buffer.alloc(16).toString('base64')}`,
      `whsec_${Buffer.alloc(65).toString('base64')}`, `${mine}x`]) {
      await rejectsWithCode(service.rotateSecret(ALICE, created.id, bad), 'invalid-secret')
    }
    assert.deepEqual(await service.getSecret(ALICE, created.id), { secret: mine })
  })

  test('pauseUncovered: every subscription of an owner that lacks a read scope is disabled, page ' +
    'after page, and says why', async (t) => {
    const { store } = await setup(t)
    const policy: AddressPolicy = { allowPrivate: false, resolve: async () => [] }
    const service = new WebhookService({
      store,
      policy,
      lookupTimeoutMs: 2000,
      eventTypes: RESOURCE_EVENT_TYPES,
      maxSubscriptions: 200,
      // ALICE is a named token narrowed to webhooks; BOB's scopes are not known (a JWT's).
      ownerScopes: {
        owners: [ALICE],
        missing: (owner, events) => owner === ALICE && events.length > 0 ? PLANTS_READ : undefined
      }
    })
    const url = 'https://93.184.216.34/hooks'
    const alice = []
    // More than one page of 100, the first one already disabled.
    for (let i = 0; i < 101; i++) alice.push(await service.createSubscription(ALICE, { url, disabled: i === 0 }))
    const bob = await service.createSubscription(BOB, { url, disabled: true })
    const first = await service.pauseUncovered()
    assert.deepEqual(first, alice.map(({ id }, i) => ({ owner: ALICE, id, scope: PLANTS_READ, paused: i !== 0 })))
    const reason = `Paused: the token that owns it lacks the scope ${PLANTS_READ}, ` +
      'which its events need; enabling it needs that scope'
    for (const { id } of alice) {
      const view = await service.getSubscription(ALICE, id)
      assert.deepEqual([view.disabled, view.disabledReason], [true, reason])
    }
    assert.equal(
      (await service.listSubscriptions(ALICE, { limit: 100 })).subscriptions.every(
        ({ disabledReason }) => disabledReason === reason), true)
    const bobs = await service.getSubscription(BOB, bob.id)
    assert.deepEqual([bobs.disabled, bobs.disabledReason], [true, undefined],
      'an owner whose scopes are not known keeps no reason')
    // At the next start they are reported again, as already paused.
    assert.deepEqual((await service.pauseUncovered()).map(({ paused }) => paused), Array(101).fill(false))
  })

  test('retry: wakes the dispatcher; refused for a disabled subscription or an unknown delivery', async (t) => {
    const { service, store, woken } = await setup(t)
    const { id } = await service.createSubscription(ALICE, { url: 'https://hooks.example.com/' })
    await store.enqueue(resourceEvent(PLANTS, 'created', plant(1n)), Date.now())
    const [delivery] = (await service.listDeliveries(ALICE, id, { limit: 10 })).deliveries
    assert.equal((await service.retryDelivery(ALICE, id, delivery?.id ?? 0n)).status, 'pending')
    assert.equal(woken(), 1)
    await rejectsWithCode(service.retryDelivery(ALICE, id, 99n), 'not-found')
    await service.updateSubscription(ALICE, id, { disabled: true })
    await rejectsWithCode(service.retryDelivery(ALICE, id, delivery?.id ?? 0n), 'subscription-disabled')
    assert.equal(woken(), 1)
  })
})
