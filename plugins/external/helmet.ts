import type { IncomingMessage, ServerResponse } from 'node:http'
import type { onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'

/**
 * What a JSON API's responses need (OWASP's REST Security Cheat Sheet). Helmet's HTML-only headers
 * are off here and sent on Swagger UI's pages only: see docs/performance.md#what-the-measurements-decided.
 */
const API_HELMET_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] }
  },
  // frame-ancestors 'none', for browsers that only know the older header.
  xFrameOptions: { action: 'deny' },
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false
}

/** Worked out once (no CSP nonces): see docs/performance.md#what-the-measurements-decided. */
function helmetHeaders (options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader (name: string, value: unknown) { headers[name.toLowerCase()] = String(value) },
    removeHeader () {}
  }
  // helmet only calls setHeader/removeHeader on the response, synchronously, and never reads the request.
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, () => {})
  return headers
}

export const SECURITY_HEADERS: Readonly<Record<string, string>> = helmetHeaders(API_HELMET_OPTIONS)

/** Helmet's defaults where they differ from the API's; Swagger UI sets its own CSP. */
const DOCUMENT_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(helmetHeaders({ contentSecurityPolicy: false }))
    .filter(([name, value]) => SECURITY_HEADERS[name] !== value)
)

export const documentSecurityHeaders: onRequestHookHandler = function documentSecurityHeaders (_request, reply, done) {
  void reply.headers(DOCUMENT_SECURITY_HEADERS)
  done()
}

/** Pairs, not the object: `reply.headers` reads an object's keys and values through lookups every caller shares. */
const SECURITY_HEADER_LIST: ReadonlyArray<readonly [string, string]> = Object.entries(SECURITY_HEADERS)

export default fp(async function helmetPlugin (app) {
  app.addHook('onRequest', function securityHeaders (_request, reply, done) {
    for (const [name, value] of SECURITY_HEADER_LIST) void reply.header(name, value)
    done()
  })
}, { name: 'helmet' })
