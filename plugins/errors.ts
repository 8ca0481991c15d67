import fp from 'fastify-plugin'
import { errorBody, ShuttingDownError, toErrorBody } from '../src/errors.js'

/**
 * The one way out for every failure: validation, auth, unknown routes, body parsing, crashes.
 * Each leaves as `{ error, message }` with `error` equal to the HTTP status.
 */
export default fp(async function errorsPlugin (app) {
  app.setErrorHandler(function handleError (error, request, reply) {
    const body = toErrorBody(error)
    if (body.error === 500) request.log.error({ err: error }, 'request failed')
    // Deliberate 503s (draining, overload, a spent connection) come in floods exactly when the
    // service sheds load: one line each, without a stack, and only at debug level.
    else if (body.error === 503) request.log.debug({ reason: body.message }, 'request refused')
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
