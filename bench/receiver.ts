import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * The webhook receiver of `npm run bench -- --webhook`: answers every delivery 204 at once, and
 * `GET /count` with how many it has had and how many distinct `webhook-id`s among them (the bench
 * reads it to see whether delivery kept up, and that none came twice).
 * Its own process, so the load generator and plant-store do not share its CPU time.
 */
let received = 0
const ids = new Set<string>()
const server = createServer((request, response) => {
  if (request.method === 'GET' && request.url === '/count') {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ received, distinct: ids.size }))
    return
  }
  const id = request.headers['webhook-id']
  request.resume()
  request.on('end', () => {
    received++
    if (typeof id === 'string') ids.add(id)
    response.writeHead(204).end()
  })
})
server.keepAliveTimeout = 5000
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  process.stdout.write(`receiver is listening on http://127.0.0.1:${port}\n`)
})
process.once('SIGTERM', () => { server.close(() => process.exit(0)); server.closeAllConnections() })
