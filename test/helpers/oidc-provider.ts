import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type JWTPayload } from 'jose'
import Provider from 'oidc-provider'
import { PLANTS_READ, PLANTS_WRITE, SCOPES } from './resources.js'

/** The audience (resource indicator) the test provider issues access tokens for. */
export const AUDIENCE = 'https://plants.test'

/** A signing key of the provider, private part included, so a test can sign tokens the provider never issued. */
export interface SigningKey { kid: string, alg: 'ES256' | 'RS256' | 'PS256' | 'EdDSA', privateJwk: JWK }

export async function signingKey (kid: string, alg: SigningKey['alg'] = 'ES256'): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'EdDSA' && { crv: 'Ed25519' }) })
  return { kid, alg, privateJwk: { ...await exportJWK(privateKey), kid, alg, use: 'sig' } }
}

/** One client per scope and one with every scope: `client_id` = its name, secret `<name>-secret`. */
export const CLIENTS: Record<string, readonly string[]> = {
  reader: [PLANTS_READ],
  writer: [PLANTS_WRITE],
  // Subscribing to plant events needs plants:read as well.
  integrator: ['webhooks', PLANTS_READ],
  admin: SCOPES
}

export interface TestProvider {
  issuer: string
  port: number
  /** Requests to the key set (`/jwks`) so far, on this provider and any started in its place. */
  jwksRequests: () => number
  /** A client-credentials access token (a JWT for AUDIENCE) for the client, with the scopes asked (all of the
   * client's by default). */
  token: (client: string, scope?: string) => Promise<string>
  /** Stops answering (connections refused). */
  stop: () => Promise<void>
  /** Starts again on the same port, signing with `keys[0]` and publishing all of them (a key rotation). */
  restart: (keys: readonly SigningKey[]) => Promise<void>
}

/**
 * A real OpenID provider (the certified `oidc-provider`) on 127.0.0.1: client credentials with
 * resource indicators, so its access tokens are JWTs for AUDIENCE signed with the first key given.
 * Its issuer is http://127.0.0.1:<port>, which oidc-provider accepts (it checks no scheme).
 */
export async function startProvider (keys: readonly SigningKey[], port = 0): Promise<TestProvider> {
  let jwksRequests = 0
  let server: Server | undefined
  let issuer = ''

  const listen = async (signing: readonly SigningKey[], at: number): Promise<number> => {
    const provider = makeProvider(`http://127.0.0.1:${at}`, signing)
    provider.use(async (ctx, next) => {
      if (ctx.path === '/jwks') jwksRequests++
      // No kept-alive sockets: a client's pooled one would outlive a stop or a restart and fail its next request.
      ctx.set('connection', 'close')
      await next()
    })
    const listening = provider.listen(at, '127.0.0.1')
    server = listening
    await once(listening, 'listening')
    return (listening.address() as AddressInfo).port
  }

  const stopServer = async (): Promise<void> => {
    if (server === undefined) return
    const closing = server
    server = undefined
    closing.closeAllConnections()
    await new Promise<void>((resolve) => closing.close(() => resolve()))
  }
  // The issuer names the port, which is known once listening: listen, then start over on that port.
  const chosen = port !== 0
    ? port
    : await (async () => {
      const p = await listen(keys,
        0); await stopServer(); return p
    })()
  issuer = `http://127.0.0.1:${chosen}`
  await listen(keys, chosen)
  jwksRequests = 0

  return {
    issuer,
    port: chosen,
    jwksRequests: () => jwksRequests,
    async token (client, scope) {
      const scopes = scope ?? (CLIENTS[client] ?? []).join(' ')
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client}:${client}-secret`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded'
        },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          resource: AUDIENCE,
          ...(scopes !== '' && { scope: scopes })
        })
      })
      const body = await res.json() as { access_token?: string, error?: string, error_description?: string }
      if (body.access_token === undefined) {
        throw new Error(`the provider issued no token: ${body.error ?? ''} ${body.error_description ?? ''}`)
      }
      return body.access_token
    },
    stop: stopServer,
    async restart (next) {
      await stopServer()
      await listen(next, chosen)
    }
  }
}

function makeProvider (issuer: string, keys: readonly SigningKey[]): Provider {
  const [first] = keys
  if (first === undefined) throw new Error('a provider needs a signing key')
  return new Provider(issuer, {
    clients: Object.entries(CLIENTS).map(([name, scopes]) => ({
      client_id: name,
      client_secret: `${name}-secret`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: scopes.join(' ')
    })),
    // No ID tokens are issued here, but client metadata must name an algorithm the key set has.
    clientDefaults: { id_token_signed_response_alg: first.alg },
    ttl: { ClientCredentials: 300 },
    // Swagger UI (another origin) asks the token endpoint from the browser with a client secret.
    clientBasedCORS: () => true,
    scopes: [...SCOPES],
    jwks: { keys: keys.map((key) => key.privateJwk) as never },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => AUDIENCE,
        useGrantedResource: async () => true,
        getResourceServerInfo: async () => ({
          scope: SCOPES.join(' '),
          audience: AUDIENCE,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 300,
          jwt: { sign: { alg: first.alg, kid: first.kid } }
        })
      }
    }
  })
}

/** A token signed with `key` (the provider's, or any other), with the claims the provider would put, changed by
 * `claims`. */
export async function forge (key: SigningKey, provider: TestProvider, claims: JWTPayload = {},
  header: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  return await new SignJWT({
    sub: 'forger',
    client_id: 'forger',
    scope: PLANTS_READ,
    iss: provider.issuer,
    aud: AUDIENCE,
    iat: now,
    exp: now + 300,
    ...claims
  })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header })
    .sign(await importJWK(key.privateJwk, key.alg))
}
