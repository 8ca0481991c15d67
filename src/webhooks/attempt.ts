import { performance } from 'node:perf_hooks'
import type { DeliveryQueue } from './delivery-queue.js'
import { attemptDelivery, type AttemptOptions, type AttemptRequest, type AttemptResult } from './deliver.js'
import type { AttemptEvent, AttemptTrace, Report } from './dispatcher-events.js'
import { verdict } from './schedule.js'
import { signatureHeader } from './signing.js'
import type { ClaimedDelivery, DeliveryCompletion } from './store-contract.js'

/** What an attempt sends, signed now: a delivery's, or a test event's. */
type SignedMessage = Pick<ClaimedDelivery, 'url' | 'payload' | 'messageId' | 'secrets'>

/** Signs a message now with every secret it carries and sends it: never rejects. */
export type Send = (
  message: SignedMessage, attemptedAt: number, extraHeaders?: Record<string, string>
) => Promise<AttemptResult>

export function sender ({ userAgent, ...attempt }: AttemptOptions & { userAgent: string }): Send {
  return async (message, attemptedAt, extraHeaders) => {
    let request: AttemptRequest
    try {
      request = signedRequest(message, attemptedAt, userAgent)
      if (extraHeaders !== undefined) request.headers = { ...extraHeaders, ...request.headers }
    } catch (err) {
      // A secret that cannot sign is a failed attempt, never an exception leaving the delivery leased.
      const why = err instanceof Error ? err.message : String(err)
      return { kind: 'error', reason: 'internal', message: `the request could not be signed: ${why}` }
    }
    return await attemptDelivery(request, attempt)
  }
}

/** The Standard Webhooks request: the stored body, signed now with every active secret. */
function signedRequest (message: SignedMessage, attemptedAt: number, userAgent: string): AttemptRequest {
  const timestamp = Math.floor(attemptedAt / 1000)
  return {
    url: message.url,
    body: message.payload,
    headers: {
      'content-type': 'application/json',
      'user-agent': userAgent,
      'webhook-id': message.messageId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(message.secrets, message.messageId, timestamp, message.payload)
    }
  }
}

export interface AttemptContext {
  send: Send
  queue: DeliveryQueue
  schedule: readonly number[]
  jitter: number
  random: () => number
  now: () => number
  disableAfterMs: number
  /** Told each answer, so a fast receiver earns slots (DeliverySlots.answered). */
  answered: (subscriptionId: bigint, statusCode: number | undefined, durationMs: number) => void
  traceAttempt: ((delivery: ClaimedDelivery) => AttemptTrace) | undefined
  report: Report
}

/** One attempt: sent, judged, its completion written. `sent` lets the next start while the completion is written. */
export async function attempt (
  context: AttemptContext, delivery: ClaimedDelivery, lease: string, sent: () => void
): Promise<void> {
  const attemptedAt = context.now()
  const started = performance.now()
  const trace = context.traceAttempt?.(delivery)
  const result = await context.send(delivery, attemptedAt, trace?.headers)
  const durationMs = performance.now() - started
  const attempts = delivery.attempts + 1
  if (result.kind === 'error' && result.reason === 'aborted') {
    await context.queue.release(lease, [delivery.id])
    const error = describeFailure(result) ?? 'aborted'
    trace?.end({ ...eventOf(delivery, attempts), status: 'pending', error, durationMs, recorded: false })
    return
  }
  const statusCode = result.kind === 'response' ? result.statusCode : undefined
  context.answered(delivery.subscriptionId, statusCode, durationMs)
  sent()
  // The retry wait runs from the attempt's end, or one that timed out would be retried at once.
  const outcome = verdict({ ...(statusCode !== undefined && { statusCode }), attempts, attemptedAt: context.now() },
    context.schedule, context.jitter, context.random)
  const failure = describeFailure(result)
  const completion: DeliveryCompletion = {
    id: delivery.id,
    lease,
    attemptedAt,
    durationMs,
    ...(result.kind === 'response' && { statusCode: result.statusCode, responseBody: result.body }),
    ...(failure !== undefined && { error: failure }),
    status: outcome.status === 'succeeded' ? 'succeeded' : outcome.status === 'retry' ? 'pending' : 'failed',
    ...(outcome.status === 'retry' && { nextAttemptAt: outcome.nextAttemptAt }),
    disableSubscription: outcome.status === 'gone',
    failingDisableBefore: attemptedAt - context.disableAfterMs
  }
  let recorded = false
  try {
    const done = await context.queue.complete(completion)
    recorded = done.recorded
    if (done.subscriptionDisabled) {
      const reason = outcome.status === 'gone' ? 'gone' : 'failing'
      context.report('subscription-disabled', { subscriptionId: delivery.subscriptionId, reason })
    }
  } catch (error) {
    // The lease runs out and the delivery is attempted again: at least once, never lost.
    context.report('store-error', { operation: 'complete', error })
  }
  const event: AttemptEvent = {
    ...eventOf(delivery, attempts),
    ...(delivery.origin.requestId !== undefined && { requestId: delivery.origin.requestId }),
    status: completion.status,
    ...(statusCode !== undefined && { statusCode }),
    ...(completion.error !== undefined && { error: completion.error }),
    ...(completion.nextAttemptAt !== undefined && { nextAttemptAt: completion.nextAttemptAt }),
    durationMs,
    recorded
  }
  trace?.end(event)
  context.report('attempt', event)
}

function eventOf (delivery: ClaimedDelivery, attempt: number) {
  return {
    deliveryId: delivery.id,
    subscriptionId: delivery.subscriptionId,
    messageId: delivery.messageId,
    eventType: delivery.eventType,
    attempt
  }
}

/** Why an attempt did not succeed, in words; undefined for a 2xx. */
export function describeFailure (result: AttemptResult): string | undefined {
  if (result.kind === 'error') return `${result.reason}: ${result.message}`
  const status = result.statusCode
  if (status >= 200 && status < 300) return undefined
  if (status === 410) return 'the receiver answered 410 Gone: the subscription is disabled'
  if (status >= 300 && status < 400) return `the receiver answered ${status}, a redirect: redirects are not followed`
  return `the receiver answered ${status}`
}
