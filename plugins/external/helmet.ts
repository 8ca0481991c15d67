import type { IncomingMessage, ServerResponse } from 'node:http'
import type { onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'

/**
 * What a JSON API's responses need (OWASP's REST Security Cheat Sheet): a content security policy
 * that allows nothing (nothing here is a document to render or frame), HSTS, `nosniff`, framing
 * denied, no referrer, and `Cross-Origin-Resource-Policy: same-origin` (another site cannot embed a
 * response with a no-cors request). Helmet's other defaults only mean something on an HTML
 * document (`Cross-Origin-Opener-Policy`, `Origin-Agent-Cluster`, `X-DNS-Prefetch-Control`,
 * `X-Download-Options`, `X-Permitted-Cross-Domain-Policies`, `X-XSS-Protection`); sent on every
 * JSON answer they only made it larger (a read went from 22 headers to 16: README, "Performance").
 * Swagger UI's pages get them (documentSecurityHeaders, used by plugins/external/docs.ts).
 */
const API_HELMET_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] }
  },
  // The CSP's frame-ancestors 'none', for browsers that only know the older header.
  xFrameOptions: { action: 'deny' },
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false
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
export const SECURITY_HEADERS: Readonly<Record<string, string>> = helmetHeaders(API_HELMET_OPTIONS)

/**
 * What an HTML page changes: helmet's defaults where they differ from the API's. Its CSP is left to
 * the page's owner (Swagger UI sets its own, with `frame-ancestors 'self'`, which is what
 * `X-Frame-Options: SAMEORIGIN`, helmet's default, says).
 */
const DOCUMENT_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(helmetHeaders({ contentSecurityPolicy: false }))
    .filter(([name, value]) => SECURITY_HEADERS[name] !== value)
)

/** An onRequest hook for the routes that serve HTML pages (Swagger UI). */
export const documentSecurityHeaders: onRequestHookHandler = function documentSecurityHeaders (_request, reply, done) {
  void reply.headers(DOCUMENT_SECURITY_HEADERS)
  done()
}

/** Security headers (helmet's, for a JSON API) on every response. */
export default fp(async function helmetPlugin (app) {
  app.addHook('onRequest', function securityHeaders (_request, reply, done) {
    void reply.headers(SECURITY_HEADERS)
    done()
  })
}, { name: 'helmet' })
