import { sha256 } from '../lib/digest.js'

/**
 * Longer ids (UTF-8 bytes) are kept as a digest: ids are keys, and a PostgreSQL index row is bounded. Never
 * changed: the migrations that rewrote longer ids (PostgreSQL 10, SQLite 11) used it.
 */
export const MAX_PRINCIPAL_ID_BYTES = 256

/** `jwt:<sub>`, or where too long `jwt-sha256:<hex SHA-256 of sub>`, which no `jwt:` id equals (a sub is unbounded). */
export function jwtPrincipalId (sub: string): string {
  const id = `jwt:${sub}`
  return Buffer.byteLength(id) <= MAX_PRINCIPAL_ID_BYTES ? id : `jwt-sha256:${sha256(sub, 'hex')}`
}

/**
 * No NUL (PostgreSQL's text cannot hold it) and no lone surrogate (PostgreSQL would store U+FFFD, making two subjects
 * one principal); with `u`, a surrogate pair is one character, so the class matches only a lone one.
 */
export function isStorableSubject (sub: string): boolean {
  return !sub.includes('\u0000') && !/[\uD800-\uDFFF]/u.test(sub)
}
