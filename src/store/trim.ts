/**
 * The most rows a sandbox tenant keeps of what grows with use and outlives it: idempotency keys,
 * chosen ids remembered ahead of the id sequence, deliveries (with their attempts) and outbox
 * events. Beyond, the oldest go first (see docs/operations.md#running-a-public-sandbox).
 */
export interface StorageLimits {
  keys: number
  chosenIds: number
  deliveries: number
  events: number
}
