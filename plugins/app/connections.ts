import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'
import { connectionSpent, shuttingDown } from '../../src/lib/errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** True from SIGTERM on: /health/ready answers 503; requests are refused after SHUTDOWN_DELAY_MS. */
    readonly draining: boolean
  }
  interface FastifyContextConfig {
    /** The health probes: /health/live still says the process answers while it finishes in-flight work. */
    answersWhileDraining?: boolean
  }
}

/**
 * Draining and keep-alive bounds, answered with 503 in the Error shape (Fastify's and Node's own answer bare bodies).
 * Every answer while draining, and the last one on a spent connection, says `Connection: close`.
 */
export default fp(async function connectionsPlugin (app) {
  let draining = false
  let refusing = false
  app.decorate('draining', { getter: () => draining })
  // During the delay the listener still accepts and serves, while readiness already says "going away".
  app.addHook('preClose', async () => {
    draining = true
    const delayMs = app.config.shutdownDelayMs
    if (delayMs > 0) {
      app.log.info({ delayMs }, 'shutting down: not ready, still serving until the delay is over')
      await sleep(delayMs)
    }
    refusing = true
  })
  // Callback-form hooks: an async hook costs a promise and a microtask per request even when idle.
  app.addHook('onRequest', function refuseWhileDraining (request, reply, done) {
    if (refusing) void reply.header('connection', 'close')
    done(refusing && request.routeOptions.config.answersWhileDraining !== true ? shuttingDown() : undefined)
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
