import bearerAuth from '@fastify/bearer-auth'
import type { onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { bearerToken, TokenSet } from '../../src/tokens.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook that lets a request through only with a valid `Authorization: Bearer` token. */
    authenticate: onRequestHookHandler
  }
  interface FastifyRequest {
    /**
     * The digest of the caller's bearer token when it is one of the configured tokens, else
     * undefined. Worked out once per request, before rate limiting: auth, the rate-limit key and
     * the idempotency scope all read this one value.
     */
    tokenDigest: string | undefined
  }
}

/**
 * Bearer-token authentication. Each request's `Authorization` header is read once, by
 * `bearerToken`, and matched by TokenSet, whose comparison leaks neither the token's length nor
 * which token matched. `@fastify/bearer-auth` (with the same reading of the header) provides the
 * routes' hook; its failures go to the error handler, so they leave as 401 in the Error shape
 * with `WWW-Authenticate`.
 */
export default fp(async function authPlugin (app) {
  const tokens = new TokenSet(app.config.tokens)
  app.decorateRequest('tokenDigest', undefined)
  app.addHook('onRequest', function identifyCaller (request, _reply, done) {
    const token = bearerToken(request.headers.authorization)
    if (token !== undefined) request.tokenDigest = tokens.match(token)
    done()
  })

  await app.register(bearerAuth, {
    keys: [],
    auth: (_token, request) => request.tokenDigest !== undefined,
    addHook: false,
    specCompliance: 'rfc6749',
    verifyErrorLogLevel: 'info'
  })
  const verify = app.verifyBearerAuth
  if (verify === undefined) throw new Error('@fastify/bearer-auth did not provide verifyBearerAuth')
  app.decorate('authenticate', verify)
}, { name: 'auth', dependencies: ['config', 'errors'] })
