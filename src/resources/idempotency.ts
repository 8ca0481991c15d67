import { sha256 } from '../lib/digest.js'

export interface IdempotencyKey {
  /** The caller's principal id, never its token, so clients cannot collide. */
  scope: string
  key: string
  fingerprint: string
}

/** A create's fields in a fixed order, as the service will perform it (ids as given, names trimmed). */
export type CreateFields = ReadonlyArray<string | bigint | undefined>

/**
 * Two bodies that would create the same thing have the same fingerprint (ids as decimal strings, absent fields as
 * null).
 */
function createFingerprint (fields: CreateFields): string {
  const json = fields.map((field) => field === undefined ? null : typeof field === 'bigint' ? String(field) : field)
  return sha256(JSON.stringify(json), 'hex')
}

/**
 * The key as the store keeps it: scoped by the caller's principal id (never the token), so two
 * callers never share or see each other's keys.
 */
export function idempotencyKey (principalId: string, key: string, fields: CreateFields): IdempotencyKey {
  return { scope: principalId, key, fingerprint: createFingerprint(fields) }
}
