import { Type, type Static, type TObject } from '@sinclair/typebox'
import { ConfigError } from '../lib/errors.js'
import { flagSetting } from '../config/flag-setting.js'

/** The OIDC_* settings: their part of EnvSchema (src/config/load-config.ts composes them, in this order). */
export const OIDC_SETTINGS = {
  // OpenID Connect access tokens (docs/configuration.md).
  OIDC_ISSUER: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'The OpenID provider whose JWT access tokens are accepted (its issuer URL; keys found through ' +
        '/.well-known/openid-configuration); unset: no JWTs.'
    })
  ),
  OIDC_AUDIENCE: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        "The audience (`aud`) an access token must be issued for: this service's resource indicator; required with " +
        'OIDC_ISSUER.'
    })
  ),
  OIDC_CLOCK_SKEW_MS: Type.Integer({
    minimum: 0,
    maximum: 600_000,
    default: 30_000,
    description:
      "How far the provider's clock may be off when checking a token's `exp`, `nbf` and `iat`, in milliseconds."
  }),
  OIDC_JWKS_COOLDOWN_MS: Type.Integer({
    minimum: 0,
    maximum: 3_600_000,
    default: 30_000,
    description:
      "The least time between two fetches of the provider's key set (a token with an unknown `kid`, or a " +
      'signature that fails under a cached `kid`, triggers one), in milliseconds; after a failed fetch, at most 5 s.'
  }),
  OIDC_REQUIRE_AT_JWT: flagSetting(
    '1',
    '`0` also accepts JWTs whose `typ` header is not `at+jwt` (RFC 9068), for providers that issue ' +
      'access tokens as plain `JWT`; an ID token of the same provider then passes too.'
  )
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

/** Host names an http:// issuer may have: a provider on the same machine (development, tests). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * OIDC_ISSUER and OIDC_AUDIENCE: both or neither. The issuer is an https URL (http only on
 * loopback: keys fetched in clear from elsewhere could be anyone's), kept as written, since tokens'
 * `iss` must equal it exactly.
 */
export function oidcConfig (parsed: OidcEnv): OidcConfig | undefined {
  const issuer = parsed.OIDC_ISSUER?.trim() ?? ''
  if (issuer === '') {
    if (parsed.OIDC_AUDIENCE !== undefined) {
      throw new ConfigError('invalid configuration: OIDC_AUDIENCE is set but OIDC_ISSUER is not')
    }
    return undefined
  }
  let url: URL
  try {
    url = new URL(issuer)
  } catch {
    throw new ConfigError(
      'invalid configuration: OIDC_ISSUER must be an absolute https URL (e.g. https://login.example.com)'
    )
  }
  const secure = url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))
  if (!secure || url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new ConfigError(
      'invalid configuration: OIDC_ISSUER must be an absolute https URL (e.g. https://login.example.com) without ' +
      'credentials, query or fragment; http only on loopback'
    )
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
