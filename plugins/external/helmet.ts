import type { IncomingMessage, ServerResponse } from 'node:http'
import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'

/**
 * The API only serves JSON, so its content security policy allows nothing at all; `/docs` (Swagger
 * UI) sets its own, looser policy (see plugins/docs.ts), which replaces this one on its responses.
 */
const HELMET_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] }
  }
}

/**
 * The headers helmet sets, worked out once. They are the same on every response (no CSP nonces),
 * and `@fastify/helmet` rebuilt the helmet middleware on every request: a third of a read's CPU
 * time and ~30 MB of peak memory under load (README, "Performance").
 */
function helmetHeaders (options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader (name: string, value: string | number | readonly string[]) { headers[name.toLowerCase()] = String(value) },
    removeHeader () {}
  }
  // helmet only calls setHeader/removeHeader on the response, synchronously, and never reads the request.
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, () => {})
  return headers
}

/** The security headers every response carries (the benchmark's bench/headers.ts measures them). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = helmetHeaders(HELMET_OPTIONS)

/** Security headers (helmet's) on every response. */
export default fp(async function helmetPlugin (app) {
  app.addHook('onRequest', function securityHeaders (_request, reply, done) {
    void reply.headers(SECURITY_HEADERS)
    done()
  })
}, { name: 'helmet' })
