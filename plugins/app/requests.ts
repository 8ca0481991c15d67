import fp from 'fastify-plugin'
import { invalidHeader } from '../../src/errors.js'

/**
 * What every request must be before a route sees it: an HTTP/1.1 request names exactly one Host
 * (RFC 9112 §3.2; Node's own check answers a bare 400 and is off, see app.ts).
 */
export default fp(async function requestsPlugin (app) {
  app.addHook('onRequest', function requireOneHost (request, _reply, done) {
    const { raw } = request
    if (raw.headers.host === undefined ? raw.httpVersion === '1.1' : hostLines(raw.rawHeaders) > 1) {
      done(invalidHeader('The request must have exactly one Host header'))
      return
    }
    done()
  })
}, { name: 'requests', dependencies: ['errors'] })

/** How many Host lines the request had (Node keeps only the first in `headers`). */
function hostLines (rawHeaders: string[]): number {
  let count = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() === 'host') count++
  }
  return count
}
