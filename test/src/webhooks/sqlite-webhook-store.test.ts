import { PLANTS } from '../../../src/resources/plants.js'
import { resourceEvent } from '../../../src/webhooks/events.js'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { newWebhookSecret } from '../../../src/webhooks/signing.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { PLANT_CREATED } from '../../helpers/resources.js'

test("SQLite (one process per file): releaseOrphanedLeases gives back a dead process's leased deliveries, " +
  'due as they were', async (t) => {
  const cleanup = cleanupStack(t)
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-webhooks-'))
  cleanup.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const plants = createSqliteStore({ filename: join(dir, 'plants.db'), synchronous: 'normal' })
  cleanup.after(() => plants.close())
  const store = plants.webhooks
  const now = Date.now()
  await store.createSubscription({
    owner: 'owner', url: 'http://127.0.0.1:9/hook', events: [PLANT_CREATED], disabled: false, secret: newWebhookSecret()
  }, now)
  const at = new Date(now).toISOString()
  assert.equal(
    await store.enqueue(resourceEvent(PLANTS, 'created', { id: 1n, name: 'fern', createdAt: at, updatedAt: at }), now),
    1)
  const claim = { now, leaseMs: 60_000, limit: 10, perSubscription: 10, skipSubscriptions: [] }
  const [dead] = await store.claimDue({ ...claim, lease: 'killed:1' })
  assert.ok(dead !== undefined)
  assert.deepEqual(await store.claimDue({ ...claim, lease: 'restarted:1' }), [], 'held by the lease')

  assert.equal(await store.releaseOrphanedLeases?.(), 1)
  const [again] = await store.claimDue({ ...claim, lease: 'restarted:2' })
  assert.deepEqual(again, dead, 'the same delivery, no attempt counted')
  assert.equal(await store.releaseOrphanedLeases?.(), 1)
  assert.equal(await store.releaseOrphanedLeases?.(), 0)
})
