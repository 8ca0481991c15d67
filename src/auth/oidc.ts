import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import { authUnavailable, invalidToken, ServiceError } from '../lib/errors.js'
import type { OidcConfig } from './oidc-settings.js'
import type { Principal, Scope } from './scopes.js'
import { tokenDigest } from './tokens.js'
import { isStorableSubject, jwtPrincipalId } from './principal-id.js'

/** The signature algorithms accepted: asymmetric only, so a public key can never serve as an HMAC secret. */
const ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const

const FETCH_TIMEOUT_MS = 5000
/** Cached keys are refetched in the background this long after a fetch, so a key the provider dropped stops working. */
export const KEYS_MAX_AGE_MS = 10 * 60_000

/** The cooldown after a failed fetch, if OIDC_JWKS_COOLDOWN_MS is longer: the 503's Retry-After is what is left. */
export const FAILED_FETCH_COOLDOWN_MS = 5000

/** Verified tokens remembered until they expire; past this many, the oldest is forgotten first. */
const VERIFIED_CACHE_SIZE = 10_000

/** A JWS compact serialization's shape (three base64url parts): worth verifying as a JWT. */
export const looksLikeJwt = (token: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token)

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null
const asString = (value: unknown): string | undefined => typeof value === 'string' ? value : undefined

async function fetchJson (url: string): Promise<unknown> {
  const response = await fetch(url, {
    redirect: 'error',
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    headers: { accept: 'application/json' }
  })
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`)
  return await response.json()
}

async function discoverKeySet (issuer: string): Promise<string> {
  const discovery = await fetchJson(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`)
  // OpenID Connect Discovery §4.3: the document must name the issuer it was fetched for.
  if (!isObject(discovery) || discovery.issuer !== issuer) {
    throw new Error('the discovery document names another issuer')
  }
  if (typeof discovery.jwks_uri !== 'string') throw new Error('the discovery document has no jwks_uri')
  return discovery.jwks_uri
}

/** For `plant-store check`, as the first token would: the discovery document, then a key set with a key. */
export async function checkProvider (issuer: string): Promise<number> {
  const set = await fetchJson(await discoverKeySet(issuer))
  const keys = isObject(set) && Array.isArray(set.keys) ? set.keys.length : 0
  createLocalJWKSet(set as JSONWebKeySet)
  if (keys === 0) throw new Error('its key set holds no key')
  return keys
}

/**
 * The provider's keys, cached. Not jose's createRemoteJWKSet: its cooldown counts from the last successful fetch
 * (a down provider gets a request per unknown `kid`) and a stale cache refetches before answering (an outage fails
 * keys that still fit). Here every fetch starts the cooldown, and a signature failing under a cached `kid` refetches
 * too (a key replaced under it); key selection and crypto stay jose's.
 */
export class ProviderKeys {
  readonly #issuer: string
  readonly #cooldownMs: number
  readonly #onFailure: (err: unknown) => void
  readonly #now: () => number
  #jwksUri: string | undefined
  #keys: JWTVerifyGetKey | undefined
  #fetchedAt = -Infinity
  #attemptedAt = -Infinity
  #failed = false
  #pending: Promise<void> | undefined

  constructor (issuer: string, cooldownMs: number, onFailure: (err: unknown) => void, now: () => number = Date.now) {
    this.#issuer = issuer
    this.#cooldownMs = cooldownMs
    this.#onFailure = onFailure
    this.#now = now
  }

  /** When the next fetch may start: the cooldown after the last attempt, shorter after a failed one. */
  #nextFetchAt (): number {
    return this.#attemptedAt + (this.#failed ? Math.min(this.#cooldownMs, FAILED_FETCH_COOLDOWN_MS) : this.#cooldownMs)
  }

  #coolingDown (): boolean {
    return this.#now() < this.#nextFetchAt()
  }

  /** A 503 whose Retry-After is the time until a fetch is allowed again (at least a second). */
  #unavailable (cause?: unknown): ServiceError {
    return authUnavailable(Math.max(1, Math.ceil((this.#nextFetchAt() - this.#now()) / 1000)), cause)
  }

  async #load (): Promise<void> {
    this.#attemptedAt = this.#now()
    this.#jwksUri ??= await discoverKeySet(this.#issuer)
    this.#keys = createLocalJWKSet(await fetchJson(this.#jwksUri) as JSONWebKeySet)
    this.#fetchedAt = this.#now()
  }

  /** Fetches the key set, or joins the fetch under way; a failure is reported once and becomes 'auth-unavailable'. */
  #refresh (): Promise<void> {
    if (this.#pending !== undefined) return this.#pending
    const pending = this.#load().then(
      () => { this.#failed = false },
      (err: unknown) => {
        this.#failed = true
        this.#onFailure(err)
        throw this.#unavailable(err)
      }
    ).finally(() => { this.#pending = undefined })
    this.#pending = pending
    return pending
  }

  /** jose's key resolver: the cached key for the token's header, refetching the set at most once per cooldown. */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    /** Whether a fetch this request waited for has answered for the kid: the set then settles it. */
    let fetched = false
    if (this.#keys === undefined) {
      if (!await this.refetch()) throw this.#unavailable()
      fetched = true
    } else if (this.#now() - this.#fetchedAt >= KEYS_MAX_AGE_MS && !this.#coolingDown()) {
      this.#refresh().catch(() => {})
    }
    try {
      return await (this.#keys as JWTVerifyGetKey)(header, token)
    } catch (err) {
      if (!isJoseError(err, 'ERR_JWKS_NO_MATCHING_KEY') || fetched) throw err
      // A `kid` not in the cache: perhaps the provider rotated its keys. One fetch per cooldown, whoever asks.
      if (await this.refetch()) return await (this.#keys as JWTVerifyGetKey)(header, token)
      // Within the cooldown the set cannot be fetched: nothing tells a kid the provider lacks from one it
      // has just rotated in (while it is down, too), so the client is told when a fetch may settle it.
      throw this.#unavailable(err)
    }
  }

  /** Fetches the key set again unless within the cooldown (false then), or joins a fetch under way. */
  async refetch (): Promise<boolean> {
    if (this.#pending === undefined && this.#coolingDown()) return false
    await this.#refresh()
    return true
  }
}

const isJoseError = (err: unknown, code: string): boolean => isObject(err) && err.code === code

/** What failed, in words for the client, from jose's error; undefined for anything that is not a token's fault. */
function failedCheck (err: unknown): string | undefined {
  if (!isObject(err) || typeof err.code !== 'string') return undefined
  switch (err.code) {
    case 'ERR_JOSE_ALG_NOT_ALLOWED': return `its algorithm is not accepted (only ${ALGORITHMS.join(', ')})`
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED': return 'its signature does not verify'
    case 'ERR_JWT_EXPIRED': return 'it has expired (exp)'
    case 'ERR_JWKS_NO_MATCHING_KEY': return 'no key of the provider\'s key set matches it (kid)'
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS': return 'several keys of the provider\'s key set match it (kid)'
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      // jose's reason `invalid`: a time claim that is not a number (`"iat": "soon"`).
      if (err.reason === 'invalid') return `its ${String(err.claim)} claim is not a number of seconds (NumericDate)`
      switch (err.claim) {
        case 'iss': return 'it was issued by another issuer (iss)'
        case 'aud': return 'it is meant for another audience (aud)'
        case 'nbf': return 'it is not valid yet (nbf)'
        case 'iat': return 'it was issued in the future (iat)'
        case 'exp': return 'it has no expiry (exp)'
        case 'typ': return 'it is not an access token (its typ header is not at+jwt, RFC 9068)'
        default: return `its ${String(err.claim)} claim does not hold`
      }
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
    case 'ERR_JOSE_NOT_SUPPORTED':
    case 'ERR_JWK_INVALID':
      return 'it is not a well-formed signed JWT'
    default: return undefined
  }
}

/** `scope` (space-separated, RFC 9068), else `scp` (an array, as some providers send); unknown ones are ignored. */
function scopesOf (payload: JWTPayload, known: (name: string) => name is Scope): Set<Scope> {
  const granted = asString(payload.scope) ?? payload.scp
  const names = Array.isArray(granted)
    ? granted.filter((name): name is string => typeof name === 'string')
    : asString(granted)?.split(' ') ?? []
  return new Set(names.filter(known))
}

/**
 * Verifies one provider's JWT access tokens. A signature check is dear and clients reuse a token until it expires,
 * so a verified token's principal is remembered by its digest until `exp`; refusals are not.
 */
export class OidcVerifier {
  readonly #config: OidcConfig
  readonly #now: () => number
  /** The scopes this app knows (its resources'): a token's others are ignored. */
  readonly #isScope: (name: string) => name is Scope
  readonly #verified = new Map<string, { principal: Principal, expiresAt: number }>()
  readonly keys: ProviderKeys

  constructor (
    config: OidcConfig, onKeysFailure: (err: unknown) => void, known: (name: string) => name is Scope,
    now: () => number = Date.now
  ) {
    this.#config = config
    this.#now = now
    this.#isScope = known
    this.keys = new ProviderKeys(config.issuer, config.jwksCooldownMs, onKeysFailure)
  }

  async verify (token: string): Promise<Principal> {
    const digest = tokenDigest(token)
    const known = this.#verified.get(digest)
    if (known !== undefined) {
      if (this.#now() < known.expiresAt) return known.principal
      this.#verified.delete(digest)
    }
    const verified = await this.#check(token)
    const [oldest] = this.#verified.keys()
    if (this.#verified.size >= VERIFIED_CACHE_SIZE && oldest !== undefined) this.#verified.delete(oldest)
    this.#verified.set(digest, verified)
    return verified.principal
  }

  async #verifyOnce (token: string): Promise<JWTPayload> {
    const { payload } = await jwtVerify(token, this.keys.getKey, {
      issuer: this.#config.issuer,
      audience: this.#config.audience,
      algorithms: [...ALGORITHMS],
      clockTolerance: this.#config.clockSkewMs / 1000,
      requiredClaims: ['exp'],
      ...(this.#config.requireAtJwt && { typ: 'at+jwt' })
    })
    return payload
  }

  async #verifySignature (token: string): Promise<JWTPayload> {
    try {
      return await this.#verifyOnce(token)
    } catch (err) {
      // A key replaced under the same `kid` fails the cached one: refetch (once per cooldown) and verify again.
      if (!isJoseError(err, 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') || !await this.keys.refetch()) throw err
    }
    return await this.#verifyOnce(token)
  }

  async #check (token: string): Promise<{ principal: Principal, expiresAt: number }> {
    let payload: JWTPayload
    try {
      payload = await this.#verifySignature(token)
    } catch (err) {
      const check = failedCheck(err)
      if (check === undefined) throw err
      throw invalidToken(check)
    }
    // jose checks `iat` against the clock only with maxTokenAge; the skew applies to it as to exp and nbf.
    if (typeof payload.iat === 'number' && payload.iat * 1000 > this.#now() + this.#config.clockSkewMs) {
      throw invalidToken('it was issued in the future (iat)')
    }
    if (typeof payload.sub !== 'string' || payload.sub === '') throw invalidToken('it has no subject (sub)')
    if (!isStorableSubject(payload.sub)) {
      throw invalidToken('its subject (sub) is not well-formed text (a NUL or an unpaired UTF-16 surrogate)')
    }
    const client = asString(payload.client_id) ?? asString(payload.azp)
    const principal: Principal = {
      id: jwtPrincipalId(payload.sub),
      name: payload.sub,
      scopes: scopesOf(payload, this.#isScope),
      ...(client !== undefined && { client })
    }
    // jwtVerify required `exp`.
    return { principal, expiresAt: Number(payload.exp) * 1000 }
  }
}
