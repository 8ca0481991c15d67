/**
 * `node build/bench/headers.js [rounds]`: what response headers alone cost. A bare Fastify route
 * answers plant-store's read body, once with no extra headers and once with the 17 that a plant-store
 * read sends besides Fastify's own (request id, helmet's, the rate limit's, ETag). Alternating rounds
 * (default 3) of 5 s at 32 connections; prints each round and the medians of req/s and server CPU
 * µs per request (docs/performance.md).
 */
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import Fastify from 'fastify'
import { SECURITY_HEADERS } from '../plugins/external/helmet.js'
import { cpuSeconds, median } from './measure.js'

const BODY = '{"id":1,"name":"Plant ' +
  '1","createdAt":"2026-11-23T20:54:51.006Z","updatedAt":"2026-11-23T20:54:51.006Z","tag":"indoor"}'

/**
 * The headers of `GET /plants/1` on plant-store that a bare route does not send: helmet's (the
 * service's own set), the request id, the rate limit's and the ETag (values as a read answers them).
 */
const READ_HEADERS: Record<string, string> = {
  'x-request-id': '958bb530-d6dd-4071-a285-f522eeb49e86',
  ...SECURITY_HEADERS,
  'ratelimit-limit': '1000',
  'ratelimit-remaining': '998',
  'ratelimit-reset': '60',
  etag: '"OM3Q51pvjl_aL3CpZ2NQJp"'
}
const EXTRA = Object.keys(READ_HEADERS).length

if (process.argv[2] === 'serve') {
  const headers = process.argv[3] === 'with' ? READ_HEADERS : {}
  const app = Fastify({ logger: false })
  app.get('/plants/1',
    (_request, reply) => { void reply.headers(headers).type('application/json; charset=utf-8').send(BODY) })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  process.send?.(address)
} else {
  const rounds = Number(process.argv[2] ?? 3)
  const measure = async (variant: 'without' | 'with'): Promise<{ rps: number, cpuUs: number }> => {
    const child = fork(fileURLToPath(import.meta.url), ['serve', variant])
    try {
      const url = await new Promise<string>(
        (resolve) => child.once('message', (message) => { resolve(String(message)) }))
      await autocannon({ url: `${url}/plants/1`, connections: 32, duration: 2 })
      const before = cpuSeconds(child.pid as number) ?? Number.NaN
      const result = await autocannon({ url: `${url}/plants/1`, connections: 32, duration: 5 })
      const used = (cpuSeconds(child.pid as number) ?? Number.NaN) - before
      return { rps: result.requests.average, cpuUs: used * 1e6 / result.requests.total }
    } finally {
      child.kill()
    }
  }
  const seen = {
    without: [] as Array<{ rps: number, cpuUs: number }>,
    with: [] as Array<{ rps: number, cpuUs: number }>
  }
  for (let round = 1; round <= rounds; round++) {
    for (const variant of ['without', 'with'] as const) {
      const figures = await measure(variant)
      seen[variant].push(figures)
      process.stdout.write(
        `round ${round}, ${variant} the ${EXTRA} headers: ${Math.round(figures.rps)} ` +
          `req/s, ${figures.cpuUs.toFixed(1)} µs CPU/req\n`)
    }
  }
  for (const variant of ['without', 'with'] as const) {
    process.stdout.write(`median ${variant}: ${Math.round(median(seen[variant].map((f) => f.rps)))} req/s, ` +
      `${median(seen[variant].map((f) => f.cpuUs)).toFixed(1)} µs CPU/req\n`)
  }
}
