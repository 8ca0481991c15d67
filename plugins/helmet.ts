import helmet from '@fastify/helmet'
import fp from 'fastify-plugin'

/**
 * Security headers (`@fastify/helmet`). The API only serves JSON, so its content security policy
 * allows nothing at all; `/docs` (Swagger UI) sets its own, looser policy (see plugins/docs.ts),
 * which replaces this one on its responses.
 */
export default fp(async function helmetPlugin (app) {
  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] }
    }
  })
}, { name: 'helmet' })
