import rateLimit from '@fastify/rate-limit'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import { rateLimited } from '../../src/errors.js'

/**
 * Rate limits (`@fastify/rate-limit`): RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW ms, counted
 * per principal (a plain token's digest, a named token's or a JWT subject's name; never the token) and per IP otherwise, so failed-auth
 * attempts (any wrong token) share one bucket per IP and cannot brute-force tokens. Runs as a root
 * onRequest hook, before the routes' auth hook, so it also counts requests that then fail auth.
 * `/health` opts out (`config: { rateLimit: false }`): load balancers poll it.
 *
 * With REDIS_URL the counters live in Redis, shared by every instance. A Redis that is down or slow
 * fails open (`skipOnError`): rate limiting is abuse protection, not access control (auth still
 * applies, and under-pressure still sheds load), so losing Redis must not take the API down.
 */
export default fp(async function rateLimitPlugin (app) {
  const { max, windowMs } = app.config.rateLimit
  if (max === 0 || windowMs === 0) return

  // The auth plugin has already read the header (its onRequest hook runs first).
  const clientKey = (request: FastifyRequest): string =>
    request.principal === undefined ? `ip:${request.ip}` : `token:${request.principal.id}`

  const redis = app.config.redis === undefined ? undefined : await connectRedis(app.config.redis, app.log)
  if (redis !== undefined) app.addHook('onClose', async () => { redis.disconnect() })

  await app.register(rateLimit, {
    global: false,
    max,
    timeWindow: windowMs,
    // RateLimit-Limit / -Remaining / -Reset (IETF draft) and Retry-After on a 429.
    enableDraftSpec: true,
    keyGenerator: clientKey,
    skipOnError: true,
    errorResponseBuilder: (_request, context) => rateLimited(context.after),
    ...(redis !== undefined && { redis, nameSpace: `${app.config.redis?.keyPrefix ?? ''}rate-limit:` })
  })

  const limit = app.rateLimit()
  // The callback form: an async hook around the limiter's own promise would add one more per request.
  app.addHook('onRequest', function applyRateLimit (request, reply, done) {
    if (request.routeOptions.config.rateLimit === false) {
      done()
      return
    }
    limit.call(app, request, reply).then(() => { done() }, done)
  })
}, { name: 'rate-limit', dependencies: ['config', 'errors', 'auth'] })

/**
 * A Redis client that never makes a request wait: no offline queue, no retries, a short command
 * timeout. Start-up goes on when Redis is down (requests are then not limited until it is back).
 */
async function connectRedis ({ url, keyPrefix }: { url: string, keyPrefix: string }, log: FastifyBaseLogger): Promise<Redis> {
  // Loaded only with REDIS_URL: the client costs a process without Redis ~13 MB of memory for nothing.
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, {
    // Named after the key prefix, so an operator (or a test) can tell instances' connections apart.
    connectionName: `${keyPrefix.replace(/[^\x21-\x7e]/g, '_')}rate-limit`,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    commandTimeout: 500,
    // Its default (2 s) keeps a stopping process waiting on a socket that never opened.
    disconnectTimeout: 200
  })
  // ioredis reports every failed reconnect; log only the change of state.
  let up = false
  redis.on('ready', () => { up = true; log.info('rate limit: Redis connected') })
  redis.on('error', (err: Error) => {
    if (!up) return
    up = false
    log.warn({ err }, 'rate limit: Redis unavailable, requests are not limited until it is back')
  })
  try {
    await redis.connect()
  } catch (err) {
    log.warn({ err }, 'rate limit: Redis unavailable at start-up, requests are not limited until it is back')
  }
  return redis
}
