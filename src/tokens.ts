import { sha256 } from './digest.js'
import { ALL_SCOPES, type Principal, type Scope } from './scopes.js'

/**
 * A token's digest (hex SHA-256): what API_TOKENS_FILE entries carry instead of the token, and the
 * principal id of a plain API_TOKENS token. Every part of the service derives it here, from
 * `bearerToken`'s reading of the header, so a header that authenticates maps to one digest everywhere.
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

/** Hex characters of a plain token's digest that name it in the log: enough to tell callers apart, never the token. */
const DIGEST_NAME_LENGTH = 12

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

/** An API_TOKENS_FILE entry of the named form: no token, only its digest. */
export interface NamedToken {
  name: string
  scopes: readonly Scope[]
  /** Hex SHA-256 of the token. */
  digest: string
}

/**
 * The principal of a plain API_TOKENS token: every scope, and its digest as id, which is exactly
 * what idempotency keys and webhook subscriptions created before scopes existed are keyed by.
 */
export const plainPrincipal = (digest: string): Principal =>
  ({ id: digest, name: `sha256:${digest.slice(0, DIGEST_NAME_LENGTH)}`, scopes: ALL_SCOPES })

/** The principal of a named token: its name, so a token can be replaced under the same name and keep its data. */
export const namedPrincipal = ({ name, scopes }: NamedToken): Principal =>
  ({ id: `token:${name}`, name, scopes: new Set(scopes) })

/**
 * The configured opaque tokens, kept only as digests and matched in constant time: every candidate
 * is hashed to a fixed-length digest (so its length leaks nothing) and compared with every
 * configured digest (no early exit, so which token matched leaks nothing either).
 */
export class TokenSet {
  readonly #entries: ReadonlyArray<{ digest: string, principal: Principal }>

  constructor (plain: readonly string[], named: readonly NamedToken[] = []) {
    this.#entries = [
      ...plain.map((token) => { const digest = tokenDigest(token); return { digest, principal: plainPrincipal(digest) } }),
      ...named.map((entry) => ({ digest: entry.digest, principal: namedPrincipal(entry) }))
    ]
  }

  /** The principal of the candidate when it is one of the tokens, else undefined. */
  match (candidate: string): Principal | undefined {
    const digest = tokenDigest(candidate)
    let found: Principal | undefined
    for (const entry of this.#entries) {
      const same = sameDigest(entry.digest, digest)
      found = same ? entry.principal : found
    }
    return found
  }
}
