import rateLimit from '@fastify/rate-limit'
import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import { rateLimited } from '../../src/lib/errors.js'

/**
 * Per principal (never the token), else per IP, so wrong tokens share one bucket per IP and cannot
 * brute-force tokens. Redis fails open (`skipOnError`): rate limiting is abuse protection, not
 * access control, so losing Redis must not take the API down.
 */
export default fp(async function rateLimitPlugin (app) {
  const { max, windowMs } = app.config.rateLimit
  if (max === 0 || windowMs === 0) return

  const redis = app.config.redis === undefined ? undefined : await connectRedis(app.config.redis, app.log)
  if (redis !== undefined) app.addHook('onClose', async () => { redis.disconnect() })

  await app.register(rateLimit, {
    global: false,
    max,
    timeWindow: windowMs,
    enableDraftSpec: true,
    // The auth plugin's onRequest hook, which runs first, has already read the token.
    keyGenerator: (request) => request.principal === undefined ? `ip:${request.ip}` : `token:${request.principal.id}`,
    skipOnError: true,
    errorResponseBuilder: (_request, context) => rateLimited(context.after),
    ...(redis !== undefined && { redis, nameSpace: `${app.config.redis?.keyPrefix ?? ''}rate-limit:` })
  })

  const limit = app.rateLimit()
  // A sandbox mints tenants for any token: one address cycling tokens is limited as well.
  const perAddressMax = app.config.sandbox?.ratePerAddress ?? 0
  const perAddress = perAddressMax === 0
    ? undefined
    : app.createRateLimit({ max: perAddressMax, timeWindow: windowMs, keyGenerator: ({ ip }) => `address:${ip}` })
  // The callback form: an async hook around the limiter's own promise would add one more per request.
  app.addHook('onRequest', function applyRateLimit (request, reply, done) {
    if (request.routeOptions.config.rateLimit === false) {
      done()
      return
    }
    const limited = perAddress === undefined
      ? limit.call(app, request, reply)
      : perAddress(request).then(async (verdict) => {
        if (!verdict.isAllowed && verdict.isExceeded) {
          // The headers the plugin's own 429 carries (enableDraftSpec), for this limit.
          void reply.headers({
            'ratelimit-limit': verdict.max,
            'ratelimit-remaining': 0,
            'ratelimit-reset': verdict.ttlInSeconds,
            'retry-after': verdict.ttlInSeconds
          })
          throw rateLimited(`${verdict.ttlInSeconds} seconds`)
        }
        await limit.call(app, request, reply)
      })
    limited.then(() => { done() }, done)
  })
}, { name: 'rate-limit', dependencies: ['config', 'errors', 'auth'] })

/** Never makes a request wait: no offline queue, no retries, a short timeout; start-up goes on without Redis. */
async function connectRedis ({ url, keyPrefix }: { url: string; keyPrefix: string }, log: FastifyBaseLogger) {
  // Loaded only with REDIS_URL: see docs/performance.md#what-the-measurements-decided.
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, {
    // Named after the key prefix, so an operator can tell instances' connections apart.
    connectionName: `${keyPrefix.replace(/[^\x21-\x7e]/g, '_')}rate-limit`,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    commandTimeout: 500,
    // Its default keeps a stopping process waiting on a socket that never opened.
    disconnectTimeout: 200
  })
  // ioredis reports every failed reconnect; log only the change of state.
  let up = false
  redis.on('ready', () => {
    up = true
    log.info('rate limit: Redis connected')
  })
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
