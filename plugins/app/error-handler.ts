import fp from 'fastify-plugin'
import { errorBody, ShuttingDownError, toErrorBody } from '../../src/errors.js'

/** Error codes of deliberate load shedding (errors.ts, under-pressure.ts, connections.ts). */
const SHEDDING = new Set(['SHUTTING_DOWN', 'OVERLOADED', 'CONNECTION_SPENT'])

/**
 * The one way out for every failure: validation, auth, unknown routes, body parsing, crashes.
 * Each leaves as `{ error, message }` with `error` equal to the HTTP status.
 */
export default fp(async function errorsPlugin (app) {
  app.setErrorHandler(function handleError (error, request, reply) {
    const body = toErrorBody(error)
    // Load shedding (draining, overload, a spent connection) comes in floods exactly when the service
    // is busiest: one line each, without a stack, at debug level. Any other 5xx is an error.
    if (SHEDDING.has(String((error as { code?: unknown } | null)?.code))) request.log.debug({ reason: body.message }, 'request refused')
    else if (body.error >= 500) request.log.error({ err: error }, 'request failed')
    if (body.error === 401) void reply.header('www-authenticate', 'Bearer')
    return reply.code(body.error).send(body)
  })

  app.setNotFoundHandler(function handleNotFound (request, reply) {
    return reply.code(404).send(errorBody(404, `Route ${request.method} ${request.url} not found`))
  })

  // Fastify's own drain answer is not in the Error shape, so draining is done here (see app.ts).
  let closing = false
  app.addHook('preClose', async () => { closing = true })
  app.addHook('onRequest', async (_request, reply) => {
    if (closing) {
      void reply.header('connection', 'close')
      throw new ShuttingDownError()
    }
  })
}, { name: 'errors' })
