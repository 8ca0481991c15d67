import cors from '@fastify/cors'
import fp from 'fastify-plugin'
import { DOCUMENTED_RESPONSE_HEADERS } from '../../src/schemas/headers.js'

/**
 * Off unless CORS_ORIGINS lists origins. Preflights are answered in a root onRequest hook, before any auth hook, so
 * they never need a token. Tokens travel in a header, not a cookie: no credentials mode.
 */
export default fp(async function corsPlugin (app) {
  const origins = app.config.corsOrigins
  if (origins.length === 0) return
  await app.register(cors, {
    origin: origins.includes('*') ? '*' : origins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'If-Match', 'If-None-Match', 'Idempotency-Key'],
    // A script may read only the response headers CORS exposes: every one the OpenAPI document declares.
    exposedHeaders: [...DOCUMENTED_RESPONSE_HEADERS],
    maxAge: 600,
    // Any OPTIONS gets a 204, not the plugin's plain-text 400 (which is not in the Error shape).
    strictPreflight: false
  })
}, { name: 'cors', dependencies: ['config'] })
