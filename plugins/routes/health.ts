import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ServiceError } from '../../src/errors.js'
import { errorBody, UNAVAILABLE_RETRY_AFTER_S } from '../app/error-handler.js'
import { errorResponses } from '../../src/schemas/error.js'

/** `GET /health`: public, 200 once the database answers, 503 when it does not. */
const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/health', {
    schema: {
      operationId: 'getHealth',
      summary: 'Service health',
      description: 'Reports whether the service and its database answer, and 503 while the service sheds load. Needs no token and is not rate-limited.',
      tags: ['service'],
      security: [],
      response: {
        200: Type.Object({ status: Type.Literal('ok') }, { description: 'The service and its database answer', examples: [{ status: 'ok' }] }),
        ...errorResponses({ 503: 'The database does not answer or cannot store writes, or the service is overloaded (with Retry-After)' })
      }
    },
    // Load balancers poll it; it must keep answering however busy the API is.
    config: { rateLimit: false }
  }, async (request, reply) => {
    try {
      await app.store.ping()
    } catch (err) {
      request.log.warn({ err }, 'health check: the database does not answer')
      const full = err instanceof ServiceError && err.code === 'storage-full'
      void reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S))
      return reply.code(503).send(errorBody(503, full ? 'The database storage is full' : 'The database does not answer'))
    }
    return { status: 'ok' as const }
  })
}

export default healthRoutes
