import { sha256 } from './digest.js'
import type { IdempotencyKey, NewPlant } from './store/store.js'

/**
 * A hash of the create as the service will perform it (name trimmed, fields in a fixed order, id as
 * a decimal string): two bodies that would create the same plant have the same fingerprint.
 */
function createFingerprint (plant: NewPlant): string {
  return sha256(JSON.stringify([plant.id === undefined ? null : String(plant.id), plant.name, plant.tag ?? null]), 'hex')
}

/**
 * The key as the store keeps it: scoped by the caller's principal id (never the token), so two
 * callers never share or see each other's keys.
 */
export function idempotencyKey (principalId: string, key: string, plant: NewPlant): IdempotencyKey {
  return { scope: principalId, key, fingerprint: createFingerprint(plant) }
}
