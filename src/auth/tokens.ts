import { sha256 } from '../lib/digest.js'
import type { Principal, Scope } from './scopes.js'

/** What API_TOKENS_FILE entries, rate-limit keys, idempotency scopes and logs carry instead of the token. */
export const tokenDigest = (token: string): string => sha256(token, 'hex')

const SCHEME = 'bearer '

/** Exactly what @fastify/bearer-auth (specCompliance rfc6749) accepts, so the two never disagree. */
export function bearerToken (header: string | undefined): string | undefined {
  if (header?.slice(0, SCHEME.length).toLowerCase() !== SCHEME) return undefined
  const token = header.slice(SCHEME.length).trim()
  return token === '' ? undefined : token
}

const DIGEST_LENGTH = 64

/** Hex characters of a plain token's digest that name it in the log: enough to tell callers apart, never the token. */
const DIGEST_NAME_LENGTH = 12

/** Constant time, like timingSafeEqual, without turning both into Buffers on every request. */
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

/** A plain API_TOKENS token: every scope (the app's), and its digest as id, as data stored before scopes is keyed. */
export const plainPrincipal = (digest: string, every: ReadonlySet<Scope>): Principal =>
  ({ id: digest, name: `sha256:${digest.slice(0, DIGEST_NAME_LENGTH)}`, scopes: every })

/** A named token: its name, so a token replaced under the same name keeps its data. */
export const namedPrincipal = ({ name, scopes }: NamedToken): Principal =>
  ({ id: `token:${name}`, name, scopes: new Set(scopes) })

/** Matched in constant time: fixed-length digests, and no early exit, so neither length nor match leaks. */
export class TokenSet {
  readonly #entries: ReadonlyArray<{ digest: string, principal: Principal }>

  /** `every`: what a plain token holds, every scope of the app's resources. */
  constructor (plain: readonly string[], named: readonly NamedToken[], every: ReadonlySet<Scope>) {
    this.#entries = [
      ...plain.map((token) => {
        const digest = tokenDigest(token)
        return { digest, principal: plainPrincipal(digest, every) }
      }),
      ...named.map((entry) => ({ digest: entry.digest, principal: namedPrincipal(entry) }))
    ]
  }

  match (candidate: string): Principal | undefined {
    const digest = tokenDigest(candidate)
    let found: Principal | undefined
    for (const entry of this.#entries) {
      found = sameDigest(entry.digest, digest) ? entry.principal : found
    }
    return found
  }
}
