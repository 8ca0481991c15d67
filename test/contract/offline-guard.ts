import { Socket } from 'node:net'

/**
 * Loaded first (`node --import`) into the processes of the contract test: a TCP connection to
 * anything but this machine's loopback is refused and reported on stderr (`offline-guard:`), so a
 * tool that fetches something at run time (a schema, an update check, an upload) fails the run
 * instead of quietly depending on the network. Unix sockets (a path, no host) are local.
 */

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost'])

/** Where a `Socket#connect` call goes; undefined for a Unix socket. */
function hostOf (args: unknown[]): string | undefined {
  // net.connect() hands connect() its normalized arguments as one array: [options, callback].
  const first = Array.isArray(args[0]) ? args[0][0] : args[0]
  if (typeof first === 'object' && first !== null) {
    const { host, path } = first as { host?: unknown, path?: unknown }
    if (typeof path === 'string') return undefined
    return typeof host === 'string' ? host : 'localhost'
  }
  if (typeof first === 'string' && !/^\d+$/.test(first)) return undefined
  return typeof args[1] === 'string' ? args[1] : 'localhost'
}

const connect = Socket.prototype.connect as (...args: unknown[]) => Socket
Socket.prototype.connect = function guardedConnect (this: Socket, ...args: unknown[]): Socket {
  const host = hostOf(args)
  if (host !== undefined && !LOOPBACK.has(host.replace(/^\[|\]$/g, ''))) {
    process.stderr.write(`offline-guard: refused a connection to ${host}\n`)
    throw new Error(`offline-guard: refused a connection to ${host} (the contract test runs without a network)`)
  }
  return connect.apply(this, args)
} as typeof Socket.prototype.connect
