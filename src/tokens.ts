import { sha256 } from './digest.js'

/** What rate-limit keys, idempotency scopes and logs carry instead of the token itself. */
export const tokenDigest = (token: string): string => sha256(token, 'hex')

const SCHEME = 'bearer '

/** Exactly what @fastify/bearer-auth (specCompliance rfc6749) accepts, so the two never disagree. */
export function bearerToken (header: string | undefined): string | undefined {
  if (header === undefined || header.length <= SCHEME.length || header.slice(0, SCHEME.length).toLowerCase() !== SCHEME) return undefined
  const token = header.slice(SCHEME.length).trim()
  return token === '' ? undefined : token
}

const DIGEST_LENGTH = 64

/** Constant time, like timingSafeEqual, without turning both into Buffers on every request. */
function sameDigest (a: string, b: string): boolean {
  let difference = 0
  for (let i = 0; i < DIGEST_LENGTH; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return difference === 0
}

/** Matched in constant time: fixed-length digests, and no early exit, so neither length nor match leaks. */
export class TokenSet {
  readonly #digests: readonly string[]

  constructor (tokens: readonly string[]) {
    this.#digests = tokens.map(tokenDigest)
  }

  match (candidate: string): string | undefined {
    const digest = tokenDigest(candidate)
    let found = false
    for (const known of this.#digests) found = sameDigest(known, digest) || found
    return found ? digest : undefined
  }
}
