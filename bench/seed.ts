import { buildApp } from '../src/main/app.js'
import { loadConfig } from '../src/config/load-config.js'
import type { Store } from '../src/store/contract.js'
import { tokenDigest } from '../src/auth/tokens.js'
import { eventTypesOf } from '../src/webhooks/events.js'
import { newWebhookSecret } from '../src/webhooks/signing.js'

/**
 * Fills a database through the store contract, so any backend `databaseUrl` names is seeded
 * alike (the benchmarks' set-up, never part of what they measure): `count` plants named `Plant <n>`,
 * tagged indoor and outdoor in turn; with `subscriptionUrl`, then one subscription of `token`'s to
 * every event, so it receives the workload's events only. Resolves with the plants' ids in order.
 */
export async function seed (databaseUrl: string, token: string, count: number,
  subscriptionUrl?: string): Promise<bigint[]> {
  const app = await buildApp(loadConfig({
    DATABASE_URL: databaseUrl,
    API_TOKENS: token,
    LOG_LEVEL: 'silent',
    SQLITE_SYNCHRONOUS: 'normal',
    // A thousand creates queue on the pool at once: on a busy machine the wait may pass the defaults.
    PG_CONNECT_TIMEOUT_MS: '120000',
    PG_STATEMENT_TIMEOUT_MS: '120000'
  }))
  try {
    await app.ready()
    const store: Store = app.store
    const ids: bigint[] = []
    for (let start = 0; start < count; start += 1000) {
      const chunk = Array.from({ length: Math.min(1000, count - start) }, (_, i) =>
        store.plants.create({ name: `Plant ${start + i}`, tag: (start + i) % 2 === 0 ? 'indoor' : 'outdoor' }))
      for (const { item } of await Promise.all(chunk)) ids.push(item.id)
    }
    if (subscriptionUrl !== undefined) {
      await store.webhooks.createSubscription({
        owner: tokenDigest(token),
        url: subscriptionUrl,
        events: eventTypesOf(app.resources),
        disabled: false,
        secret: newWebhookSecret()
      }, Date.now())
    }
    return ids
  } finally {
    await app.close()
  }
}
