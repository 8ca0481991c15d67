import { sha256 } from './digest.js'

/**
 * A token's digest (hex SHA-256): what rate-limit keys, idempotency scopes and logs carry instead
 * of the token itself. Every part of the service derives it here, from `bearerToken`'s reading of
 * the header, so a header that authenticates maps to one digest everywhere.
 */
export const tokenDigest = (token: string): string => sha256(token, 'hex')

const SCHEME = 'bearer '

/**
 * The token of an `Authorization: Bearer <token>` header, if any: the scheme name in any case
 * (RFC 9110 §11.1) and one space, then the token with surrounding white space trimmed. This is
 * exactly what @fastify/bearer-auth (specCompliance rfc6749) accepts, so the two never disagree.
 */
export function bearerToken (header: string | undefined): string | undefined {
  if (header === undefined || header.length <= SCHEME.length || header.slice(0, SCHEME.length).toLowerCase() !== SCHEME) return undefined
  const token = header.slice(SCHEME.length).trim()
  return token === '' ? undefined : token
}

/** Characters in a digest: SHA-256 in hex. */
const DIGEST_LENGTH = 64

/**
 * Whether two digests are equal, in time that depends on neither: every character is compared,
 * differences are OR-ed together, nothing branches on the data. Digests are fixed-length hex, so
 * this does what timingSafeEqual does without first turning both into Buffers (which cost more
 * than the comparison on every request).
 */
function sameDigest (a: string, b: string): boolean {
  let difference = 0
  for (let i = 0; i < DIGEST_LENGTH; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return difference === 0
}

/**
 * The configured tokens, kept only as digests and matched in constant time: every candidate is
 * hashed to a fixed-length digest (so its length leaks nothing) and compared with every
 * configured token (no early exit, so which token matched leaks nothing either).
 */
export class TokenSet {
  readonly #digests: readonly string[]

  constructor (tokens: readonly string[]) {
    this.#digests = tokens.map(tokenDigest)
  }

  /** The candidate's digest when it is one of the tokens, else undefined. */
  match (candidate: string): string | undefined {
    const digest = tokenDigest(candidate)
    let found = false
    for (const known of this.#digests) found = sameDigest(known, digest) || found
    return found ? digest : undefined
  }
}
