import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { webhookBusy } from '../lib/errors.js'
import { describeFailure, type Send } from './attempt.js'
import { newMessageId, testEventPayload } from './events.js'
import type { DeliverySlots } from './slots.js'
import type { SigningTarget } from './store-contract.js'

/** A test event waits this long at most for a free slot and its turn in the pace. */
const TEST_WAIT_MS = 1000
const TEST_SLOT_POLL_MS = 20

/** Where a test event goes, whose it is, and the secrets it is signed with (every one a delivery would carry). */
export interface TestTarget extends SigningTarget {
  id: bigint
  owner: string
}

export interface TestAttempt {
  webhookId: string
  succeeded: boolean
  at: number
  durationMs: number
  statusCode?: number
  error?: string
  responseBody?: string
}

interface TestSendContext {
  slots: DeliverySlots
  send: Send
  now: () => number
}

/**
 * A signed test event now, outside the outbox (nothing stored or retried), in a delivery's slot and pace. With no
 * slot free within TEST_WAIT_MS it is refused (`webhook-busy`), never queued.
 */
export async function sendTest (context: TestSendContext, target: TestTarget): Promise<TestAttempt> {
  const { slots } = context
  const deadline = performance.now() + TEST_WAIT_MS
  for (;;) {
    const busy = slots.isApiBusy()
    const pace = slots.paceWait(busy)
    if (pace <= 0 && slots.mayStart(target.id, target.owner, busy)) break
    const wait = pace > 0 ? pace : TEST_SLOT_POLL_MS
    if (performance.now() + wait > deadline) throw webhookBusy(Math.max(1, Math.ceil(pace / 1000)))
    await sleep(wait)
  }
  return await slots.hold(target.id, target.owner, async () => await attemptTest(context, target))
}

async function attemptTest ({ send, now }: TestSendContext, target: TestTarget): Promise<TestAttempt> {
  const attemptedAt = now()
  const messageId = newMessageId()
  const started = performance.now()
  const payload = testEventPayload(target.id, attemptedAt)
  const result = await send({ messageId, payload, url: target.url, secrets: target.secrets }, attemptedAt)
  const error = describeFailure(result)
  return {
    webhookId: messageId,
    succeeded: error === undefined,
    at: attemptedAt,
    durationMs: Math.round(performance.now() - started),
    ...(result.kind === 'response' && { statusCode: result.statusCode, responseBody: result.body }),
    ...(error !== undefined && { error })
  }
}
