import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { notReady, ReadOnlyDatabaseError, SchemaUnavailableError, ServiceError } from '../../src/lib/errors.js'
import { errorBody, UNAVAILABLE_RETRY_AFTER_S } from '../app/error-handler.js'
import { ErrorSchema, errorResponses } from '../../src/schemas/error.js'
import { retryAfterHeader } from '../../src/schemas/headers.js'
import { ref } from '../../src/schemas/ref.js'

/** Seconds a client (or a balancer) is asked to wait before asking a not-ready instance again. */
const NOT_READY_RETRY_AFTER_S = 5

const StatusOk = Type.Object({ status: Type.Literal('ok') }, { examples: [{ status: 'ok' }] })

/**
 * Health for load balancers and orchestrators; none needs a token or is rate-limited.
 *
 * - `GET /health`: 200 once the database answers, 503 when not (and, like every API route, while
 *   the service sheds load or drains). Unchanged: balancers configured for it keep working.
 * - `GET /health/live`: the process answers. Nothing else: a database outage or an overload is no
 *   reason to restart the process (a restart would not fix either and would cut in-flight work),
 *   and during a drain it stays 200 so the orchestrator lets the drain finish.
 * - `GET /health/ready`: whether this instance should get traffic: not draining, not shedding
 *   load, and the database answers and takes writes (for SQLite: no WAL sync has failed; for
 *   PostgreSQL: not read-only, as a standby or a demoted primary is). Otherwise 503 in the
 *   Error shape with Retry-After; from SIGTERM on it answers 503 at once while in-flight work drains.
 */
const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // The one probe (plugins/app/database-watch.ts): it logs an outage's start and end, and metrics read it.
  const ping = async (): Promise<void> => { await app.databaseWatch.probe() }
  healthRoute(app, ping)
  probeRoutes(app, ping)
}

type App = Parameters<FastifyPluginAsyncTypebox>[0]

function healthRoute (app: App, ping: () => Promise<void>): void {
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
        await ping()
      } catch (err) {
        // The database watch logs an outage once, as it starts and ends: not once per probe.
        request.log.debug({ err }, 'health check: the database does not answer')
        const full = err instanceof ServiceError && err.code === 'storage-full'
        void reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S))
        return reply
          .code(503)
          .send(errorBody(503, full
            ? 'The database storage is full'
            : err instanceof ReadOnlyDatabaseError ? 'The database is read-only' : 'The database does not answer'))
      }
      return sandbox ? { status: 'ok' as const, mode: 'sandbox' as const } : { status: 'ok' as const }
    }
  )
}

function probeRoutes (app: App, ping: () => Promise<void>): void {
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
        await ping()
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
