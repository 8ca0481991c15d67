import { timingSafeEqual } from 'node:crypto'
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

/**
 * The configured tokens, kept only as digests and matched in constant time: every candidate is
 * hashed to 32 bytes (so its length leaks nothing) and compared with every configured token
 * (no early exit, so which token matched leaks nothing either).
 */
export class TokenSet {
  readonly #digests: readonly Buffer[]

  constructor (tokens: readonly string[]) {
    this.#digests = tokens.map((token) => Buffer.from(tokenDigest(token), 'hex'))
  }

  /** The candidate's digest when it is one of the tokens, else undefined. */
  match (candidate: string): string | undefined {
    const digest = tokenDigest(candidate)
    const bytes = Buffer.from(digest, 'hex')
    let found = 0
    for (const known of this.#digests) found |= Number(timingSafeEqual(known, bytes))
    return found === 1 ? digest : undefined
  }
}
