import * as http from 'node:http'
import * as https from 'node:https'
import { Socket } from 'node:net'
import type { RequestFunction } from '../../src/webhooks/deliver.js'

const LOOPBACK = new Set(['127.0.0.1', '::1', '[::1]'])

/**
 * The network rule for tests, enforced: a webhook delivery connects only to 127.0.0.1 or ::1. Any
 * other destination fails as a connection error without a socket ever being opened (Node skips the
 * DNS lookup for IP literals, so the connection itself is what is replaced).
 */
export const loopbackOnlyRequest: RequestFunction = (url, options) => {
  const send = url.protocol === 'https:' ? https.request : http.request
  if (LOOPBACK.has(url.hostname)) return send(url, options)
  // Without the agent: with one (deliveries pass `agent: false`, which makes Node create a fresh
  // one), Node connects through the agent's own createConnection and ignores the option below.
  const { agent: _agent, ...withoutAgent } = options
  return send(url, {
    ...withoutAgent,
    createConnection: () => {
      const socket = new Socket()
      process.nextTick(
        () => socket.destroy(
          Object.assign(new Error(`test network rule: no connection to ${url.hostname}`), { code: 'ETESTNETWORK' })))
      return socket
    }
  })
}
