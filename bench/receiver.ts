import { createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/**
 * The webhook receiver of `npm run bench -- --webhook`: answers every delivery 204 at once, and
 * `GET /count` with how many it has had, how many distinct `webhook-id`s among them (the bench
 * reads it to see whether delivery kept up, and that none came twice) and on how many TCP
 * connections the deliveries came (the bench's own polls not counted).
 * Its own process, so the load generator and plant-store do not share its CPU time.
 *
 * For the delivery latency, it also notes when the first ARRIVALS_KEPT deliveries arrived, by the
 * plant id in their body (`GET /arrival?plant=<id>`: `{ "at": <epoch ms> }`, or 404), as
 * `performance.timeOrigin + performance.now()`: sub-millisecond, and comparable across processes.
 */
const ARRIVALS_KEPT = 1000
let received = 0
let connections = 0
const deliverySockets = new WeakSet<Socket>()
const ids = new Set<string>()
const arrivals = new Map<string, number>()
const server = createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://receiver')
  if (request.method === 'GET' && url.pathname === '/count') {
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({ received, distinct: ids.size, connections }))
    return
  }
  if (request.method === 'GET' && url.pathname === '/arrival') {
    const at = arrivals.get(url.searchParams.get('plant') ?? '')
    if (at === undefined) response.writeHead(404).end()
    else response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ at }))
    return
  }
  const id = request.headers['webhook-id']
  if (!deliverySockets.has(request.socket)) {
    deliverySockets.add(request.socket)
    connections++
  }
  let body = ''
  request.setEncoding('utf8')
  request.on('data', (chunk: string) => { if (arrivals.size < ARRIVALS_KEPT) body += chunk })
  request.on('end', () => {
    const at = performance.timeOrigin + performance.now()
    received++
    if (typeof id === 'string') ids.add(id)
    const plant = /"data":\{"id":(\d+)/.exec(body)?.[1]
    if (plant !== undefined) arrivals.set(plant, at)
    response.writeHead(204).end()
  })
})
server.keepAliveTimeout = 5000
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  process.stdout.write(`receiver is listening on http://127.0.0.1:${port}\n`)
})
process.once('SIGTERM', () => { server.close(() => process.exit(0)); server.closeAllConnections() })
