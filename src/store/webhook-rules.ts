import { StoreOpenError } from '../lib/errors.js'
import type { DeliveryCompletion } from '../webhooks/store-contract.js'

/** int64's largest: the cursor of a first delivery page, which walks back from the newest. */
export const MAX_ID = 9223372036854775807n

/** Deliveries pruned per statement: one long DELETE would hold the write lock (and every write) up. */
export const PRUNE_BATCH = 1000

/** Events a delivery listing fans out per round before it reads: it shows every event written before it. */
export const FAN_OUT_ALL_BATCH = 1000

export const DELIVERY_COLUMNS = 'id, event_type, status, attempts, last_attempt_at, last_status_code, last_error, ' +
  'next_attempt_at, created_at'

/** Enabled subscriptions created before the event that asked for its type (`wants`: the dialect's test). */
export const receives = (eventId: string, wants: string, enabled: string): string =>
  `${enabled} AND s.first_event_id <= ${eventId} AND ${wants}`

/**
 * A failed attempt disables its subscription when the receiver said so (410) or it has failed since before the
 * cutoff.
 */
export const disablesSubscription = (done: DeliveryCompletion, failingSince: number | null): boolean =>
  done.disableSubscription || (failingSince ?? done.attemptedAt) <= done.failingDisableBefore

export function checkWebhookSchema (version: number, required: number): void {
  if (version < required) {
    throw new StoreOpenError(
      `the database schema (version ${version}) has no webhook tables yet: open the plant store on it first`
    )
  }
}

export async function inBatches (deleteBatch: () => Promise<number>): Promise<number> {
  let total = 0
  for (;;) {
    const deleted = await deleteBatch()
    total += deleted
    if (deleted < PRUNE_BATCH) return total
  }
}
