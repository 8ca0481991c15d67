import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'
import { connectionSpent, shuttingDown } from '../../src/errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * True from the moment the app starts closing (SIGTERM): /health/ready answers 503 from then on.
     * Requests are refused and connections told to close once SHUTDOWN_DELAY_MS has passed.
     */
    readonly draining: boolean
  }
  interface FastifyContextConfig {
    /**
     * Answered while draining instead of refused: the health probes, so an orchestrator learns
     * from /health/ready itself that this instance is going away, while /health/live still says
     * the process answers (it is finishing in-flight work, not stuck: restarting it would cut that).
     */
    answersWhileDraining?: boolean
  }
}

/**
 * The state of the service's connections, tracked here and nowhere else.
 *
 * Draining: once the app starts closing (SIGTERM, see server.ts), readiness turns 503 at once; after
 * SHUTDOWN_DELAY_MS (0 by default) the listener closes and a new request is refused with 503
 * in the Error shape (Fastify's own drain answer, `return503OnClosing`, is off because its body is
 * not), and every answer says `Connection: close`, so clients stop reusing a connection that is
 * about to go away. Routes marked `answersWhileDraining` (the health probes) still run.
 *
 * Keep-alive connections are bounded: MAX_REQUESTS_PER_SOCKET requests each (the last answer says
 * `Connection: close`). Node's own `maxRequestsPerSocket` is not used: past the limit it answers a
 * bare 503 that is not in the Error shape. Here a request past the limit (pipelined by a client
 * that ignored the `Connection: close`) is refused with 503 in the Error shape, before anything runs.
 */
export default fp(async function connectionsPlugin (app) {
  let draining = false
  let refusing = false
  app.decorate('draining', { getter: () => draining })
  // Fastify closes the listener once the preClose hooks are done: during the delay it still
  // accepts connections and serves them, while readiness already says "going away".
  app.addHook('preClose', async () => {
    draining = true
    if (app.config.shutdownDelayMs > 0) {
      app.log.info({ delayMs: app.config.shutdownDelayMs }, 'shutting down: not ready, still serving until the delay is over')
      await sleep(app.config.shutdownDelayMs)
    }
    refusing = true
  })
  // Hooks on every request take Fastify's callback form: an async hook costs a promise and a
  // microtask per request even when, as almost always, it has nothing to do.
  app.addHook('onRequest', function refuseWhileDraining (request, reply, done) {
    if (!refusing) {
      done()
      return
    }
    void reply.header('connection', 'close')
    if (request.routeOptions.config.answersWhileDraining === true) {
      done()
      return
    }
    done(shuttingDown())
  })
  app.addHook('onSend', function closeWhileDraining (_request, reply, payload, done) {
    if (refusing) void reply.header('connection', 'close')
    done(null, payload)
  })

  const max = app.config.maxRequestsPerSocket
  if (max === 0) return
  const served = new WeakMap<Socket, number>()
  app.addHook('onRequest', function capRequestsPerConnection (request, reply, done) {
    const socket = request.raw.socket
    const count = (served.get(socket) ?? 0) + 1
    served.set(socket, count)
    if (count >= max) void reply.header('connection', 'close')
    done(count > max ? connectionSpent() : undefined)
  })
}, { name: 'connections', dependencies: ['config', 'errors'] })
