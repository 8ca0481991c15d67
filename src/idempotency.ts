import { createHash } from 'node:crypto'
import type { IdempotencyKey, NewPlant } from './store/store.js'

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex')

/**
 * Whose key it is: a hash of the caller's bearer token (never the token itself), so two clients
 * with different tokens never share or see each other's keys.
 */
export function idempotencyScope (authorization: string | undefined): string {
  // The auth hook has already accepted `Bearer <token>`; take the token the way it did.
  const token = (authorization ?? '').slice('Bearer '.length).trim()
  return sha256(token)
}

/**
 * A hash of the create as the service will perform it (name trimmed, fields in a fixed order, id as
 * a decimal string): two bodies that would create the same plant have the same fingerprint.
 */
export function createFingerprint (plant: NewPlant): string {
  return sha256(JSON.stringify([plant.id === undefined ? null : String(plant.id), plant.name, plant.tag ?? null]))
}

export function idempotencyKey (authorization: string | undefined, key: string, plant: NewPlant): IdempotencyKey {
  return { scope: idempotencyScope(authorization), key, fingerprint: createFingerprint(plant) }
}
