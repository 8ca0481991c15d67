import * as crypto from 'node:crypto'

/**
 * A token's SHA-256: what rate-limit keys and idempotency scopes carry instead of the token itself.
 * Computed on every request: the one-shot `crypto.hash` (Node.js ≥ 20.12) costs a third of a Hash object.
 */
export const tokenDigest: (token: string) => Buffer = typeof crypto.hash === 'function'
  ? (token) => Buffer.from(crypto.hash('sha256', token, 'base64'), 'base64')
  : (token) => crypto.createHash('sha256').update(token).digest()

/**
 * The configured tokens, kept only as digests and matched in constant time: every candidate is
 * hashed to 32 bytes (so its length leaks nothing) and compared with every configured token
 * (no early exit, so which token matched leaks nothing either).
 */
export class TokenSet {
  readonly #digests: readonly Buffer[]

  constructor (tokens: readonly string[]) {
    this.#digests = tokens.map(tokenDigest)
  }

  /** The candidate's digest when it is one of the tokens, else undefined. */
  match (candidate: string): Buffer | undefined {
    const digest = tokenDigest(candidate)
    let found = 0
    for (const known of this.#digests) found |= Number(crypto.timingSafeEqual(known, digest))
    return found === 1 ? digest : undefined
  }
}

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), if any. */
export function bearerToken (header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1]
}
