import type { Socket } from 'node:net'
import createError from '@fastify/error'
import fp from 'fastify-plugin'

const ConnectionSpentError = createError('CONNECTION_SPENT', 'This connection has served its requests, retry on a new one', 503)

/**
 * Keep-alive connections are bounded: MAX_REQUESTS_PER_SOCKET requests each (the last answer says
 * `Connection: close`), and every answer sent while the service shuts down says `Connection: close`
 * too, so clients stop reusing a connection that is about to go away.
 *
 * Node's own `maxRequestsPerSocket` is not used: past the limit it answers a bare 503 that is not in
 * the Error shape. Here a request past the limit (pipelined by a client that ignored the
 * `Connection: close`) is refused with 503 in the Error shape, before anything runs.
 */
export default fp(async function connectionsPlugin (app) {
  let closing = false
  app.addHook('preClose', async () => { closing = true })
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) void reply.header('connection', 'close')
    return payload
  })

  const max = app.config.maxRequestsPerSocket
  if (max === 0) return
  const served = new WeakMap<Socket, number>()
  app.addHook('onRequest', async (request, reply) => {
    const socket = request.raw.socket
    const count = (served.get(socket) ?? 0) + 1
    served.set(socket, count)
    if (count >= max) void reply.header('connection', 'close')
    if (count > max) throw new ConnectionSpentError()
  })
}, { name: 'connections', dependencies: ['config', 'errors'] })
