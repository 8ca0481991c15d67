import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { Webhook } from 'standardwebhooks'

/** One request as the receiver saw it. */
export interface ReceivedRequest {
  method: string
  url: string
  headers: IncomingHttpHeaders
  body: string
  /** The address the connection came to (always loopback here). */
  localAddress: string
}

/** How the receiver answers a request; the default answers 204. */
export type Responder = (request: ReceivedRequest, res: ServerResponse) => void | Promise<void>

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` */
  origin: string
  port: number
  requests: ReceivedRequest[]
  respond: (responder: Responder) => void
  /** Resolves once `count` requests have arrived (rejects after `timeoutMs`). */
  waitFor: (count: number, timeoutMs?: number) => Promise<ReceivedRequest[]>
  close: () => Promise<void>
}

/**
 * A webhook receiver on 127.0.0.1 (the only address delivery tests may connect to), closed when the
 * test ends. It records every request and answers through the current responder. `port`: a given
 * one (e.g. where a receiver closed earlier listened) instead of a free one.
 */
export async function startReceiver (t: { after: (fn: () => Promise<void>) => void },
  port = 0): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = []
  const waiters: Array<() => void> = []
  let responder: Responder = (_request, res) => { res.writeHead(204).end() }
  const sockets = new Set<Socket>()
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const request: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        localAddress: req.socket.localAddress ?? ''
      }
      requests.push(request)
      for (const wake of waiters.splice(0)) wake()
      Promise.resolve(responder(request, res)).catch(() => { res.destroy() })
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', resolve)
  })
  const { port: listening } = server.address() as AddressInfo
  const close = async (): Promise<void> => {
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  t.after(close)
  return {
    origin: `http://127.0.0.1:${listening}`,
    port: listening,
    requests,
    respond: (next) => { responder = next },
    waitFor: async (count, timeoutMs = 5000) => {
      const deadline = Date.now() + timeoutMs
      while (requests.length < count) {
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`expected ${count} requests, got ${requests.length}`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          waiters.push(() => { clearTimeout(timer); resolve() })
        })
      }
      return requests.slice(0, count)
    },
    close
  }
}

/** Verifies a received request as a Standard Webhooks receiver would (throws when it does not verify). */
export function verifyWebhook (secret: string, request: ReceivedRequest): unknown {
  const headers: Record<string, string> = {}
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const value = request.headers[name]
    if (typeof value === 'string') headers[name] = value
  }
  return new Webhook(secret).verify(request.body, headers)
}

/** Polls `predicate` every 10 ms until it holds; rejects, naming `what`, after `timeoutMs`. */
export async function until (what: string, predicate: () => boolean | Promise<boolean>,
  timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
