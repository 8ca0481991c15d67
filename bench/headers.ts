/**
 * `node build/bench/headers.js [rounds]`: what response headers alone cost. A bare Fastify route
 * answers plant-store's read body, once with no extra headers and once with the 17 that a plant-store
 * read sends besides Fastify's own (request id, helmet's, the rate limit's, ETag). Alternating rounds
 * (default 3) of 5 s at 32 connections; prints each round and the medians of req/s and server CPU
 * µs per request. The README's Performance section quotes it ("Where the rest goes").
 */
import { fork } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import Fastify from 'fastify'

const BODY = '{"id":1,"name":"Plant 1","createdAt":"2026-11-23T20:54:51.006Z","updatedAt":"2026-11-23T20:54:51.006Z","tag":"indoor"}'

/** The headers of `GET /plants/1` on plant-store that a bare route does not send (curl -si, 2026-11-23). */
const READ_HEADERS: Record<string, string> = {
  'x-request-id': '958bb530-d6dd-4071-a285-f522eeb49e86',
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'SAMEORIGIN',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
  'ratelimit-limit': '1000',
  'ratelimit-remaining': '998',
  'ratelimit-reset': '60',
  etag: '"OM3Q51pvjl_aL3CpZ2NQJp"'
}

if (process.argv[2] === 'serve') {
  const headers = process.argv[3] === 'with' ? READ_HEADERS : {}
  const app = Fastify({ logger: false })
  app.get('/plants/1', (_request, reply) => { void reply.headers(headers).type('application/json; charset=utf-8').send(BODY) })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  process.send?.(address)
} else {
  const rounds = Number(process.argv[2] ?? 3)
  const cpuTicks = (pid: number): number => {
    // Fields 14 and 15 of /proc/<pid>/stat (user, system), after the parenthesised name; USER_HZ is 100.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    return Number(fields[11]) + Number(fields[12])
  }
  const measure = async (variant: 'without' | 'with'): Promise<{ rps: number, cpuUs: number }> => {
    const child = fork(fileURLToPath(import.meta.url), ['serve', variant])
    try {
      const url = await new Promise<string>((resolve) => child.once('message', (message) => { resolve(String(message)) }))
      await autocannon({ url: `${url}/plants/1`, connections: 32, duration: 2 })
      const before = cpuTicks(child.pid as number)
      const result = await autocannon({ url: `${url}/plants/1`, connections: 32, duration: 5 })
      const ticks = cpuTicks(child.pid as number) - before
      return { rps: result.requests.average, cpuUs: ticks * 10_000 / result.requests.total }
    } finally {
      child.kill()
    }
  }
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  const seen = { without: [] as Array<{ rps: number, cpuUs: number }>, with: [] as Array<{ rps: number, cpuUs: number }> }
  for (let round = 1; round <= rounds; round++) {
    for (const variant of ['without', 'with'] as const) {
      const figures = await measure(variant)
      seen[variant].push(figures)
      process.stdout.write(`round ${round}, ${variant} the 17 headers: ${Math.round(figures.rps)} req/s, ${figures.cpuUs.toFixed(1)} µs CPU/req\n`)
    }
  }
  for (const variant of ['without', 'with'] as const) {
    process.stdout.write(`median ${variant}: ${Math.round(median(seen[variant].map((f) => f.rps)))} req/s, ` +
      `${median(seen[variant].map((f) => f.cpuUs)).toFixed(1)} µs CPU/req\n`)
  }
}
