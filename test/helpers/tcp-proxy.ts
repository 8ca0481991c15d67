import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net'

/**
 * A loopback TCP proxy that a test can cut and restore: "the database went away" without stopping
 * the shared PostgreSQL server. While down, connections are refused and open ones are cut.
 */
export interface TcpProxy {
  port: number
  down: () => Promise<void>
  up: () => Promise<void>
  close: () => Promise<void>
}

export async function startTcpProxy (targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  const track = (socket: Socket): void => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
  }
  const server = (): Server => createServer((client) => {
    const upstream = createConnection({ port: targetPort, host: targetHost })
    track(client)
    track(upstream)
    client.pipe(upstream)
    upstream.pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  const listen = async (srv: Server, port: number): Promise<number> => await new Promise((resolve, reject) => {
    srv.once('error', reject)
    srv.listen(port, '127.0.0.1', () => resolve((srv.address() as AddressInfo).port))
  })

  let current: Server | undefined = server()
  const port = await listen(current, 0)
  const down = async (): Promise<void> => {
    const stopping = current
    current = undefined
    for (const socket of sockets) socket.destroy()
    if (stopping !== undefined) await new Promise<void>((resolve) => stopping.close(() => resolve()))
  }
  return {
    port,
    down,
    up: async () => {
      if (current !== undefined) return
      current = server()
      await listen(current, port)
    },
    close: down
  }
}
