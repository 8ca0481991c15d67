import type { Principal, Scope } from '../auth/scopes.js'
import { plainPrincipal, tokenDigest } from '../auth/tokens.js'

/** What a sandbox accepts as a token: 16 to 256 URL-safe characters (RFC 3986 unreserved). */
const SANDBOX_TOKEN = /^[A-Za-z0-9._~-]{16,256}$/

/** Any well-formed token is a tenant with every scope; its key is the token's digest, never the token. */
export const sandboxPrincipal = (token: string, every: ReadonlySet<Scope>): Principal | undefined =>
  SANDBOX_TOKEN.test(token) ? plainPrincipal(tokenDigest(token), every) : undefined
