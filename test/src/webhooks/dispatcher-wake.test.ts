import assert from 'node:assert/strict'
import { test } from 'node:test'
import { WebhookDispatcher } from '../../../src/webhooks/dispatcher.js'
import type { WebhookStore } from '../../../src/webhooks/store-contract.js'
import type { AddressPolicy } from '../../../src/webhooks/url-policy.js'
import { cleanupStack } from '../../helpers/cleanup.js'
import { sqliteWebhookDatabase } from '../../helpers/sqlite-webhooks.js'
import { until } from '../../helpers/webhook-receiver.js'

const loopback: AddressPolicy = {
  allowPrivate: true,
  resolve: async () => { throw new Error('no DNS in these tests') }
}

/** Resolves after `depth` microtasks: no timer, so the same step of the claim loop every run. */
async function microtasks (depth: number): Promise<void> {
  for (let i = 0; i < depth; i++) await Promise.resolve()
}

test('a wake() in any step after a claim is answered starts another claim: none is lost', async (t) => {
  const store = sqliteWebhookDatabase(cleanupStack(t), 'plant-store-wake-').openWebhookStore()
  // Each depth lands the wake in a later step of the claim loop's end; the poll (60 s) never helps.
  for (let depth = 0; depth < 16; depth++) {
    let claims = 0
    const counting: WebhookStore = {
      ...store,
      claimDue: async (request) => {
        const claimed = await store.claimDue(request)
        if (++claims === 1) void microtasks(depth).then(() => { dispatcher.wake() })
        return claimed
      }
    }
    const dispatcher = new WebhookDispatcher({ store: counting, policy: loopback, pollIntervalMs: 60_000 })
    await dispatcher.start()
    await until(`the wake after ${depth} microtasks is claimed for`, () => claims === 2, 2000)
    await dispatcher.stop(0)
    assert.equal(claims, 2)
  }
})
