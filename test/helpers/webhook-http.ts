/**
 * The /webhooks API of a real server (startServer's base URL) over HTTP, for the child-process tests;
 * webhooks.ts has the inject() versions for test apps.
 */
import assert from 'node:assert/strict'
import { AUTH } from './app.js'
import { until } from './webhook-receiver.js'
import type { DeliveryBody, WebhookBody } from './webhooks.js'

/** A real server's answer, read whole. */
export interface Answer {
  status: number
  headers: Headers
  body: string
}

/** One request to a real server (a base URL such as startServer's), with the test token. */
export async function call (base: string, method: string, path: string, body?: unknown,
  headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...AUTH, ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
    ...(body !== undefined && { body: JSON.stringify(body) })
  })
  return { status: res.status, headers: res.headers, body: await res.text() }
}

/** Asserts the status and parses the body. */
export async function callOk<T> (status: number, base: string, method: string, path: string, body?: unknown,
  headers?: Record<string, string>): Promise<T> {
  const answer = await call(base, method, path, body, headers)
  assert.equal(answer.status, status, `${method} ${path}: ${answer.body}`)
  return (answer.body === '' ? undefined : JSON.parse(answer.body)) as T
}

/** POST /webhooks: asserts the 201 and its Location, returns the subscription (with its secret). */
export async function subscribe (base: string, url: string, extra: Record<string, unknown> = {}): Promise<WebhookBody> {
  const answer = await call(base, 'POST', '/webhooks', { url, ...extra })
  assert.equal(answer.status, 201, answer.body)
  const subscription = JSON.parse(answer.body) as WebhookBody
  assert.equal(answer.headers.get('location'), `/webhooks/${subscription.id}`)
  assert.match(subscription.secret, /^whsec_/)
  return subscription
}

/** GET /webhooks/{id}/deliveries: the newest 100, newest first. */
export async function deliveries (base: string, subscriptionId: number): Promise<DeliveryBody[]> {
  return await callOk<DeliveryBody[]>(200, base, 'GET', `/webhooks/${subscriptionId}/deliveries?limit=100`)
}

/** Polls the subscription's deliveries until `predicate` holds; resolves with them. */
export async function untilDeliveries (
  base: string, subscriptionId: number, what: string, predicate: (list: DeliveryBody[]) => boolean, timeoutMs = 15_000
): Promise<DeliveryBody[]> {
  let list: DeliveryBody[] = []
  await until(what, async () => predicate(list = await deliveries(base, subscriptionId)),
    timeoutMs).catch((err: Error) => {
    throw new Error(`${err.message}; deliveries: ${JSON.stringify(list)}`)
  })
  return list
}

/** The body of a delivery: `{ type, timestamp, data }`. */
export interface EventBody {
  type: string
  timestamp: string
  data: Record<string, unknown>
}
