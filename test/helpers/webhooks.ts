import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import type { BuildOptions } from '../../src/main/app.js'
import type { WebhookDelivery, WebhookSubscription } from '../../src/webhooks/store-contract.js'
import { AUTH, buildTestApp, TOKEN } from './app.js'
import type { Cleanup } from './cleanup.js'
import { until } from './webhook-receiver.js'

/** A second configured token: its subscriptions are not the first one's, and the other way round. */
export const OTHER_TOKEN = 'other-token-0123456789abcdef0123456789'
export const OTHER_AUTH = { authorization: `Bearer ${OTHER_TOKEN}` } as const

/**
 * A receiver URL the address policy accepts without DNS: a public IP literal (an address of
 * example.com's). Test apps never connect to it: the test network rule (loopback-only.ts) fails
 * every attempt before a socket is opened. The documentation ranges (192.0.2.0/24, 203.0.113.0/24…)
 * would not do: the policy refuses them as reserved.
 */
export const PUBLIC_RECEIVER = 'https://93.184.216.34/hooks'

/** A subscription as JSON: the store's type with its int64 id as a JSON number. */
export type WebhookBody = Omit<WebhookSubscription, 'id'> & { id: number }

/** A delivery as JSON. */
export type DeliveryBody = Omit<WebhookDelivery, 'id'> & { id: number }

/** `whsec_` and 32 bytes in base64 (Standard Webhooks). */
export const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/

/** A test app (see buildTestApp) with two tokens: AUTH's and OTHER_AUTH's. */
export async function buildWebhooksApp (t: Cleanup, env: NodeJS.ProcessEnv = {},
  options: BuildOptions = {}): Promise<FastifyInstance> {
  return await buildTestApp(t, { API_TOKENS: `${TOKEN},${OTHER_TOKEN}`, ...env }, options)
}

/** Creates a subscription through the API (AUTH's by default) and returns the 201's body. */
export async function createWebhook (app: FastifyInstance, body: Record<string, unknown> = { url: PUBLIC_RECEIVER },
  headers: Record<string, string> = AUTH): Promise<WebhookBody> {
  const res = await app.inject({ method: 'POST', url: '/webhooks', headers, payload: body })
  assert.equal(res.statusCode, 201, res.body)
  return res.json<WebhookBody>()
}

/** Lists a subscription's deliveries until `done` holds for them (the dispatcher runs in the background). */
export async function deliveriesWhen (
  app: FastifyInstance, id: number, done: (deliveries: DeliveryBody[]) => boolean,
  headers: Record<string, string> = AUTH
): Promise<DeliveryBody[]> {
  let deliveries: DeliveryBody[] = []
  await until(`the deliveries of subscription ${id} are as expected`, async () => {
    const res = await app.inject({ url: `/webhooks/${id}/deliveries`, headers })
    assert.equal(res.statusCode, 200, res.body)
    deliveries = res.json<DeliveryBody[]>()
    return done(deliveries)
  })
  return deliveries
}

/** A subscription as GET, list and PATCH answer it: without the secret. */
export type WebhookViewBody = Omit<WebhookBody, 'secret'>

/** What GET answers for a subscription that creation (or a rotation) answered with `body`. */
export const viewOf = ({ secret: _secret, ...view }: WebhookBody): WebhookViewBody => view
