import bearerAuth from '@fastify/bearer-auth'
import type { onRequestHookHandler, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { insufficientScope } from '../../src/lib/errors.js'
import type { Principal, Scope } from '../../src/auth/scopes.js'
import { sandboxPrincipal } from '../../src/sandbox/principal.js'
import { bearerToken, TokenSet } from '../../src/auth/tokens.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Lets a request through only with a valid bearer token that has the route's `config.scope`. */
    authenticate: onRequestHookHandler
  }
  interface FastifyRequest {
    /** Worked out once: auth, rate limits, logs, idempotency and webhooks read it. */
    principal: Principal | undefined
    /** Why a JWT was refused (or could not be checked), for the auth hook to answer with. */
    authFailure: Error | undefined
  }
  interface FastifyContextConfig {
    /** Every route behind `authenticate` declares one. */
    scope?: Scope
  }
}

/** Tokens match in constant time; with OIDC_ISSUER a JWT-shaped one that matches none is verified (jose, lazily). */
export default fp(async function authPlugin (app) {
  const { all, grants, isScope } = app.scopeCatalog
  const tokens = new TokenSet(app.config.tokens, app.config.namedTokens, all)
  const sandbox = app.config.sandbox !== undefined
  const oidc = app.config.oidc === undefined
    ? undefined
    : await (async (config) => {
      const { OidcVerifier, looksLikeJwt } = await import('../../src/auth/oidc.js')
      const onKeysFailure = (err: unknown): void => {
        app.log.warn({ err }, 'OIDC: the provider\'s key set cannot be fetched')
      }
      return { verifier: new OidcVerifier(config, onKeysFailure, isScope), looksLikeJwt }
    })(app.config.oidc)

  app.decorateRequest('principal', undefined)
  app.decorateRequest('authFailure', undefined)
  app.addHook('onRequest', function identifyCaller (request, _reply, done) {
    const token = bearerToken(request.headers.authorization)
    if (token === undefined) {
      done()
      return
    }
    request.principal = sandbox ? sandboxPrincipal(token, all) : tokens.match(token)
    if (request.principal !== undefined || oidc === undefined || !oidc.looksLikeJwt(token)) {
      done()
      return
    }
    oidc.verifier.verify(token).then((principal) => {
      request.principal = principal
      done()
    }, (err: unknown) => {
      request.authFailure = err instanceof Error ? err : new Error(String(err))
      done()
    })
  })

  await app.register(bearerAuth, {
    keys: [],
    auth: (_token, request) => request.principal !== undefined,
    addHook: false,
    specCompliance: 'rfc6749',
    verifyErrorLogLevel: 'info'
  })
  const verify = app.verifyBearerAuth
  if (verify === undefined) throw new Error('@fastify/bearer-auth did not provide verifyBearerAuth')
  app.decorate('authenticate', function authenticate (request, reply, done) {
    if (request.authFailure !== undefined) {
      done(request.authFailure)
      return
    }
    verify.call(this, request, reply, (err?: Error) => {
      const needed = request.routeOptions.config.scope
      const refused = needed !== undefined &&
        (request.principal === undefined || !grants(request.principal.scopes, needed))
      done(err ?? (refused ? insufficientScope(needed) : undefined))
    })
  } satisfies onRequestHookHandler)
}, { name: 'auth', dependencies: ['config', 'errors', 'resources'] })

/** onRoute: a route that forgets its scope stops the start instead of being open to every token. */
export function requireScope (route: RouteOptions): void {
  if (route.config?.scope === undefined) {
    throw new Error(`${route.method.toString()} ${route.url} declares no scope (config.scope)`)
  }
}
