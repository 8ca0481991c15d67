import bearerAuth from '@fastify/bearer-auth'
import type { onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { TokenSet } from '../../src/tokens.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook that lets a request through only with a valid `Authorization: Bearer` token. */
    authenticate: onRequestHookHandler
    /** The configured bearer tokens, matched in constant time. */
    tokens: TokenSet
  }
}

/**
 * Bearer-token authentication. `@fastify/bearer-auth` reads the header (case-insensitive scheme
 * name per RFC 9110) and asks TokenSet, whose comparison leaks neither the token's length nor which
 * token matched (the plugin's own `keys` compare stops at the first match); its failures are handed to the error handler instead
 * of being sent by the plugin, so they leave as 401 in the Error shape with `WWW-Authenticate`.
 */
export default fp(async function authPlugin (app) {
  const tokens = new TokenSet(app.config.tokens)
  app.decorate('tokens', tokens)
  await app.register(bearerAuth, {
    keys: [],
    auth: (token) => tokens.match(token) !== undefined,
    addHook: false,
    specCompliance: 'rfc6749',
    verifyErrorLogLevel: 'info'
  })
  const verify = app.verifyBearerAuth
  if (verify === undefined) throw new Error('@fastify/bearer-auth did not provide verifyBearerAuth')
  app.decorate('authenticate', verify)
}, { name: 'auth', dependencies: ['config', 'errors'] })
