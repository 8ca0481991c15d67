import underPressure from '@fastify/under-pressure'
import fp from 'fastify-plugin'
import { OverloadedError } from '../../src/lib/errors.js'

const OVERLOAD_RETRY_AFTER_S = 10

/**
 * Every request (`/health` included, so a balancer stops sending) gets 503 instead of queueing until everything
 * times out. Utilization is off by default: a busy service that keeps up also runs near 100 %.
 */
export default fp(async function underPressurePlugin (app) {
  const { maxEventLoopDelayMs, maxEventLoopUtilization, maxHeapUsedBytes, maxRssBytes } = app.config.pressure
  await app.register(underPressure, {
    maxEventLoopDelay: maxEventLoopDelayMs,
    maxEventLoopUtilization,
    // Over the last sample, not since start-up (which is busy loading code).
    eventLoopUtilizationMode: 'interval',
    maxHeapUsedBytes,
    maxRssBytes,
    retryAfter: OVERLOAD_RETRY_AFTER_S,
    customError: OverloadedError
  })
}, { name: 'under-pressure', dependencies: ['config', 'errors'] })
