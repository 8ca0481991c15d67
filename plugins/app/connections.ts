import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import { connectionSpent, shuttingDown } from '../../src/errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** True from the moment the app starts closing: requests are refused and connections told to close. */
    readonly draining: boolean
  }
}

/**
 * The state of the service's connections, tracked here and nowhere else.
 *
 * Draining: once the app starts closing (SIGTERM, see server.ts), a new request is refused with 503
 * in the Error shape (Fastify's own drain answer, `return503OnClosing`, is off because its body is
 * not), and every answer says `Connection: close`, so clients stop reusing a connection that is
 * about to go away.
 *
 * Keep-alive connections are bounded: MAX_REQUESTS_PER_SOCKET requests each (the last answer says
 * `Connection: close`). Node's own `maxRequestsPerSocket` is not used: past the limit it answers a
 * bare 503 that is not in the Error shape. Here a request past the limit (pipelined by a client
 * that ignored the `Connection: close`) is refused with 503 in the Error shape, before anything runs.
 */
export default fp(async function connectionsPlugin (app) {
  let draining = false
  app.decorate('draining', { getter: () => draining })
  app.addHook('preClose', async () => { draining = true })
  // Hooks on every request take Fastify's callback form: an async hook costs a promise and a
  // microtask per request even when, as almost always, it has nothing to do.
  app.addHook('onRequest', function refuseWhileDraining (_request, reply, done) {
    if (!draining) {
      done()
      return
    }
    void reply.header('connection', 'close')
    done(shuttingDown())
  })
  app.addHook('onSend', function closeWhileDraining (_request, reply, payload, done) {
    if (draining) void reply.header('connection', 'close')
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
