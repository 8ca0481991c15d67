/**
 * The most rows a sandbox tenant keeps of what grows with use; beyond, the oldest go first
 * (see docs/operations.md#running-a-public-sandbox). `chosenIds`: those remembered ahead of the sequence.
 */
export interface StorageLimits {
  keys: number
  chosenIds: number
  deliveries: number
  events: number
}
