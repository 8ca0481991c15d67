import underPressure from '@fastify/under-pressure'
import fp from 'fastify-plugin'
import { OverloadedError } from '../../src/errors.js'

/** Seconds a client is asked to wait (`Retry-After`) when the service sheds load. */
const OVERLOAD_RETRY_AFTER_S = 10

/**
 * Load shedding (`@fastify/under-pressure`): while the event loop lags or memory is past its
 * threshold, every request (`/health` included, so a balancer stops sending traffic) gets 503 in
 * the Error shape with Retry-After, instead of queueing until everything times out.
 * The default signal is event-loop delay (requests waiting); utilization is off by default, since a
 * busy service that keeps up also runs near 100 %.
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
