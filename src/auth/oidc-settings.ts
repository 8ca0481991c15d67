import { Type, type Static, type TObject } from '@sinclair/typebox'
import { ConfigError } from '../lib/errors.js'
import { flagSetting, integerSetting, stringSetting } from '../config/setting-types.js'

/** The OIDC_* settings: their part of EnvSchema (src/config/load-config.ts composes them, in this order). */
export const OIDC_SETTINGS = {
  // OpenID Connect access tokens (docs/configuration.md).
  OIDC_ISSUER: Type.Optional(stringSetting({ minLength: 1 },
    'The OpenID provider whose JWT access tokens are accepted (its issuer URL; keys found through ' +
    '/.well-known/openid-configuration); unset: no JWTs.')),
  OIDC_AUDIENCE: Type.Optional(stringSetting({ minLength: 1 },
    "The audience (`aud`) an access token must be issued for: this service's resource indicator; required with " +
    'OIDC_ISSUER.')),
  OIDC_CLOCK_SKEW_MS: integerSetting({ minimum: 0, maximum: 600_000, default: 30_000 },
    "How far the provider's clock may be off when checking a token's `exp`, `nbf` and `iat`, in milliseconds."),
  OIDC_JWKS_COOLDOWN_MS: integerSetting({ minimum: 0, maximum: 3_600_000, default: 30_000 },
    "The least time between two fetches of the provider's key set (a token with an unknown `kid`, or a " +
    'signature that fails under a cached `kid`, triggers one), in milliseconds; after a failed fetch, at most 5 s.'),
  OIDC_REQUIRE_AT_JWT: flagSetting('1',
    '`0` also accepts JWTs whose `typ` header is not `at+jwt` (RFC 9068), for providers that issue ' +
    'access tokens as plain `JWT`; an ID token of the same provider then passes too.')
}

type OidcEnv = Static<TObject<typeof OIDC_SETTINGS>>

/** Where JWT access tokens come from and how they are checked (the OIDC_* settings). */
export interface OidcConfig {
  /** The issuer exactly as tokens' `iss` and the discovery document name it. */
  issuer: string
  audience: string
  clockSkewMs: number
  jwksCooldownMs: number
  /** Only `typ: at+jwt` (RFC 9068), unless OIDC_REQUIRE_AT_JWT=0. */
  requireAtJwt: boolean
}

/** Where an http:// issuer may be: on this machine (development, tests). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * OIDC_ISSUER and OIDC_AUDIENCE: both or neither. The issuer is https (keys fetched in clear could be anyone's) but
 * on loopback, and kept as written: tokens' `iss` must equal it exactly.
 */
export function oidcConfig (parsed: OidcEnv): OidcConfig | undefined {
  const issuer = parsed.OIDC_ISSUER?.trim() ?? ''
  if (issuer === '') {
    if (parsed.OIDC_AUDIENCE !== undefined) {
      throw new ConfigError('invalid configuration: OIDC_AUDIENCE is set but OIDC_ISSUER is not')
    }
    return undefined
  }
  const mustBe = 'invalid configuration: OIDC_ISSUER must be an absolute https URL (e.g. https://login.example.com)'
  const url = URL.canParse(issuer) ? new URL(issuer) : undefined
  if (url === undefined) throw new ConfigError(mustBe)
  const secure = url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))
  if (!secure || url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new ConfigError(`${mustBe} without credentials, query or fragment; http only on loopback`)
  }
  const audience = parsed.OIDC_AUDIENCE?.trim() ?? ''
  if (audience === '') {
    throw new ConfigError(
      'invalid configuration: OIDC_AUDIENCE must be set with OIDC_ISSUER (the audience tokens are issued for, e.g. ' +
      'https://plants.example.com)'
    )
  }
  return {
    issuer,
    audience,
    clockSkewMs: parsed.OIDC_CLOCK_SKEW_MS,
    jwksCooldownMs: parsed.OIDC_JWKS_COOLDOWN_MS,
    requireAtJwt: parsed.OIDC_REQUIRE_AT_JWT === '1'
  }
}
