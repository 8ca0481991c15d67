/** What a sandbox tenant keeps at most; beyond, the oldest go first (docs/operations.md#running-a-public-sandbox). */
export interface StorageLimits {
  keys: number
  chosenIds: number
  deliveries: number
  events: number
}
