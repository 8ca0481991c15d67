import { sha256 } from '../lib/digest.js'

/**
 * A principal id longer than this (UTF-8 bytes) is kept as a digest: ids are keys (webhook owners,
 * idempotency scopes) and a PostgreSQL index row is bounded. Never changed: the migrations that
 * rewrote longer ids stored before (PostgreSQL 10, SQLite 11) used this bound.
 */
export const MAX_PRINCIPAL_ID_BYTES = 256

/**
 * A JWT's principal id: `jwt:<sub>`, or where that is too long `jwt-sha256:<hex SHA-256 of sub>`,
 * which no `jwt:` id can equal. A sub is any string (RFC 7519), so it is bounded here.
 */
export function jwtPrincipalId (sub: string): string {
  const id = `jwt:${sub}`
  return Buffer.byteLength(id) <= MAX_PRINCIPAL_ID_BYTES ? id : `jwt-sha256:${sha256(sub, 'hex')}`
}

/**
 * A `sub` both stores can keep as itself: no NUL (PostgreSQL's text cannot hold it) and no lone
 * surrogate (no UTF-8 form: PostgreSQL would store U+FFFD, making two subjects one principal). With
 * `u`, a surrogate pair is one character, so the class matches only a lone one.
 */
export function isStorableSubject (sub: string): boolean {
  return !sub.includes('\u0000') && !/[\uD800-\uDFFF]/u.test(sub)
}
