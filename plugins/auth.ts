import bearerAuth from '@fastify/bearer-auth'
import type { onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook that lets a request through only with a valid `Authorization: Bearer` token. */
    authenticate: onRequestHookHandler
  }
}

/**
 * Bearer-token authentication. `@fastify/bearer-auth` checks the token (constant-time compare,
 * case-insensitive scheme name per RFC 9110); its failures are handed to the error handler instead
 * of being sent by the plugin, so they leave as 401 in the Error shape with `WWW-Authenticate`.
 */
export default fp(async function authPlugin (app) {
  await app.register(bearerAuth, {
    keys: app.config.tokens,
    addHook: false,
    specCompliance: 'rfc6749',
    verifyErrorLogLevel: 'info'
  })
  const verify = app.verifyBearerAuth
  if (verify === undefined) throw new Error('@fastify/bearer-auth did not provide verifyBearerAuth')
  app.decorate('authenticate', verify)
}, { name: 'auth', dependencies: ['config', 'errors'] })
