import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isServiceError } from '../../../src/lib/errors.js'
import { TenantRegistry, type TenantBackend } from '../../../src/sandbox/tenants.js'
import type { Store } from '../../../src/store/contract.js'

/** Tenants in a Map, each store a stub that counts its closes. */
function fakeBackend (): TenantBackend & { closes: string[] } {
  const rows = new Map<string, number>()
  const closes: string[] = []
  return {
    closes,
    exists: async (key) => rows.has(key),
    touch: async (key,
      now) => { const created = !rows.has(key); rows.set(key, Math.max(rows.get(key) ?? 0, now)); return created },
    open: async (key, created) => ({ store: { close: async () => { closes.push(key) } } as unknown as Store, created }),
    count: async () => rows.size,
    ping: async () => {},
    leastRecentlyUsed: async (before,
      limit) => [...rows].filter(([, at]) => at < before).sort((a, b) => a[1] - b[1]).slice(0, limit).map(
      ([key]) => key),
    remove: async (key, before) => (rows.get(key) ?? Infinity) < before && rows.delete(key),
    close: async () => {}
  }
}

const registryOn = (backend: TenantBackend, options: {
  openTenants?: number,
  openWaitMs?: number,
  start?: (key: string) => Promise<string>
} = {}) =>
  new TenantRegistry<string>({
    backend,
    maxTenants: 100,
    openTenants: options.openTenants ?? 10,
    ttlMs: 60_000,
    start: options.start ?? (async (key) => key),
    stop: async () => {},
    ...(options.openWaitMs !== undefined && { openWaitMs: options.openWaitMs })
  })

test('with every open store held past the wait, a new tenant is refused with sandbox-busy', async () => {
  const registry = registryOn(fakeBackend(), { openTenants: 1, openWaitMs: 1 })
  const held = await registry.acquire('a')
  await assert.rejects(registry.acquire('b'), (err: unknown) => isServiceError(err, 'sandbox-busy'))
  held.release()
  held.release()
  assert.equal((await registry.acquire('b')).tenant, 'b')
  await registry.close()
})

test('a tenant whose start fails is not kept: its store is closed, the next request tries again', async () => {
  const backend = fakeBackend()
  let fail = true
  const registry = registryOn(backend,
    { start: async (key) => { if (fail) throw new Error('seed failed'); return key } })
  await assert.rejects(registry.acquire('a'), /seed failed/)
  assert.deepEqual(backend.closes, ['a'])
  fail = false
  assert.equal((await registry.acquire('a')).tenant, 'a')
  await registry.close()
  await assert.rejects(registry.acquire('a'), (err: unknown) => isServiceError(err, 'shutting-down'))
})

test('opens waiting for a store are served in the order they came, each taking the place of ' +
  'the store idle longest', async () => {
  const registry = registryOn(fakeBackend(), { openTenants: 1 })
  const held = await registry.acquire('a')
  const served: string[] = []
  const waiting = ['b', 'c', 'd'].map(
    (key) => registry.acquire(key).then((lease) => { served.push(key); return lease }))
  while (registry.waiting < 3) await new Promise((resolve) => setImmediate(resolve))
  held.release()
  for (const [i, lease] of waiting.entries()) {
    const { tenant, release } = await lease
    assert.deepEqual(served, ['b', 'c', 'd'].slice(0, i + 1))
    assert.equal(registry.openCount, 1)
    release()
    assert.equal(tenant, ['b', 'c', 'd'][i])
  }
  assert.equal(registry.waiting, 0)
  await registry.close()
})

test('a request arriving while others wait queues behind them, even for a place that ' +
  'has just become free', async () => {
  const registry = registryOn(fakeBackend(), { openTenants: 1 })
  const held = await registry.acquire('a')
  const order: string[] = []
  const first = registry.acquire('b').then((lease) => { order.push('b'); return lease })
  held.release()
  const second = registry.acquire('c').then((lease) => { order.push('c'); return lease })
  ;(await first).release()
  ;(await second).release()
  assert.deepEqual(order, ['b', 'c'])
  await registry.close()
})

test('the sweep runs every quarter of SANDBOX_TTL_MS, at most a minute apart (the issue: at least every half ' +
  'TTL and every minute)', () => {
  const every = (ttlMs: number): number => new TenantRegistry<string>({
    backend: fakeBackend(), maxTenants: 1, openTenants: 1, ttlMs, start: async (key) => key, stop: async () => {}
  }).sweepIntervalMs
  assert.deepEqual([every(24 * 3_600_000), every(240_000), every(10_000), every(1000)], [60_000, 60_000, 2500, 250])
})
