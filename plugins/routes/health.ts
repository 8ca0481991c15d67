import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { notReady, ReadOnlyDatabaseError, SchemaUnavailableError, ServiceError } from '../../src/lib/errors.js'
import { errorBody, UNAVAILABLE_RETRY_AFTER_S } from '../app/error-handler.js'
import { ErrorSchema, errorResponses } from '../../src/schemas/error.js'
import { retryAfterHeader } from '../../src/schemas/headers.js'
import { ref } from '../../src/schemas/ref.js'

const NOT_READY_RETRY_AFTER_S = 5

const StatusOk = Type.Object({ status: Type.Literal('ok') }, { examples: [{ status: 'ok' }] })

/**
 * For load balancers and orchestrators. `/health` keeps the meaning balancers were configured for; `/health/live`
 * stays 200 through outages and overload (a restart cures neither) and drains (so they finish). The database is
 * probed through plugins/app/database-watch.ts, which logs an outage's start and end.
 */
const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  healthRoute(app)
  probeRoutes(app)
}

type App = Parameters<FastifyPluginAsyncTypebox>[0]

function healthRoute (app: App): void {
  // A sandbox says so; without SANDBOX the body (and the document) stay as they were.
  const sandbox = app.config.sandbox !== undefined
  const healthy = sandbox
    ? Type.Object(
      { status: Type.Literal('ok'), mode: Type.Literal('sandbox') },
      {
        description: 'The service and its database answer; it runs as a public sandbox',
        examples: [{ status: 'ok', mode: 'sandbox' }]
      }
    )
    : Type.Object(
      { status: Type.Literal('ok') },
      { description: 'The service and its database answer', examples: [{ status: 'ok' }] }
    )
  app.get(
    '/health',
    {
      schema: {
        operationId: 'getHealth',
        summary: 'Service health',
        description:
          'Reports whether the service and its database answer, and 503 while the service sheds load. Needs no token ' +
          'and is not rate-limited.',
        tags: ['service'],
        security: [],
        response: {
          200: healthy,
          ...errorResponses({
            503: 'The database does not answer or cannot store writes, or the service is overloaded (with Retry-After)'
          })
        }
      },
      // Load balancers poll it; it must keep answering however busy the API is.
      config: { rateLimit: false }
    },
    async (request, reply) => {
      try {
        await app.databaseWatch.probe()
      } catch (err) {
        request.log.debug({ err }, 'health check: the database does not answer')
        const message = err instanceof ServiceError && err.code === 'storage-full'
          ? 'The database storage is full'
          : err instanceof ReadOnlyDatabaseError ? 'The database is read-only' : 'The database does not answer'
        void reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S))
        return reply.code(503).send(errorBody(503, message))
      }
      return sandbox ? { status: 'ok' as const, mode: 'sandbox' as const } : { status: 'ok' as const }
    }
  )
}

function probeRoutes (app: App): void {
  // Probes run whatever the load (under-pressure lets them through: ready reports the pressure
  // itself) and while draining (see plugins/app/connections.ts).
  const probeConfig = { rateLimit: false, answersWhileDraining: true, pressureHandler: () => undefined }

  app.get(
    '/health/live',
    {
      schema: {
        operationId: 'getLiveness',
        summary: 'Liveness probe',
        description:
          'Answers 200 whenever the process answers at all, even while it drains, sheds load or has lost its ' +
          'database: none of those is cured by a restart. For a Kubernetes livenessProbe. Needs no token and is not ' +
          'rate-limited.',
        tags: ['service'],
        security: [],
        response: { 200: { ...StatusOk, description: 'The process answers' }, ...errorResponses({}) }
      },
      config: probeConfig
    },
    async () => ({ status: 'ok' as const })
  )

  app.get(
    '/health/ready',
    {
      schema: {
        operationId: 'getReadiness',
        summary: 'Readiness probe',
        description:
          'Answers 200 when this instance can serve: the database answers, no write to disk has failed, and it ' +
          'neither sheds load nor drains (from SIGTERM on it answers 503 at once while in-flight requests finish). ' +
          'For a Kubernetes readinessProbe or a load balancer. Needs no token and is not rate-limited.',
        tags: ['service'],
        security: [],
        response: {
          200: { ...StatusOk, description: 'Ready for traffic' },
          503: ref(ErrorSchema, {
            description: 'Not ready: draining, shedding load, or the database does not answer, is read-only or ' +
              'has a schema this instance cannot serve',
            headers: retryAfterHeader,
            examples: [{ error: 503, message: 'Not ready: the service is shutting down' }]
          }),
          ...errorResponses({})
        }
      },
      config: probeConfig
    },
    async (request, reply) => {
      void reply.header('retry-after', String(NOT_READY_RETRY_AFTER_S))
      if (app.draining) throw notReady('the service is shutting down')
      if (app.isUnderPressure()) throw notReady('the service is overloaded')
      try {
        await app.databaseWatch.probe()
      } catch (err) {
        const reason = err instanceof ReadOnlyDatabaseError
          ? 'the database is read-only'
          : err instanceof SchemaUnavailableError
            ? 'this instance cannot serve the database schema as it is now'
            : 'the database does not answer'
        request.log.debug({ err }, `readiness check: ${reason}`)
        throw notReady(reason, { cause: err })
      }
      reply.removeHeader('retry-after')
      return { status: 'ok' as const }
    }
  )
}

export default healthRoutes
