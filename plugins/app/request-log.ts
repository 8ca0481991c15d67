import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { levels } from 'pino'
import { routeLabel } from '../../src/route-label.js'

/** A client's X-Request-Id is kept only when it is this tame: it goes into logs and back out in a header. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * Fastify's `genReqId`: the caller's `X-Request-Id` when it is sane (at most 128 of
 * `A-Z a-z 0-9 . _ : -`), so one id follows a request through a proxy, a client's retries and this
 * service's logs; otherwise a random UUID. Anything else a client sends there (line breaks, control
 * characters, a megabyte) never reaches a log line or a response header.
 */
export function requestId (raw: IncomingMessage): string {
  const given = raw.headers['x-request-id']
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID()
}

/** Whether a logger at `level` writes lines at `line` (`silent`, pino's level above all, writes none). */
const enabled = (level: string, line: 'info' | 'warn'): boolean => (levels.values[level] ?? Infinity) <= (levels.values[line] ?? 0)

/**
 * The access log, as Fastify's `logController`: Fastify's two lines per request become one access
 * line at info, written once the answer has gone out, with what an operator asks of it: method,
 * route template, URL, status, duration, client address (the proxy's client with TRUST_PROXY) and
 * who called (the principal: a named token's name, a JWT's subject with its OAuth client, or
 * `sha256:` and 12 hex characters of a plain token's digest; never the token). Fastify's child
 * logger adds `reqId` to it, as to every line logged for the request. The arrival of a request is
 * logged at debug only.
 */
export class AccessLog extends LogController {
  override incomingRequest (request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request')
  }

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const failed = error !== null && error !== undefined
    // At LOG_LEVEL=warn (a busy instance's setting) a completed request writes nothing: do not
    // gather its fields (route label, client address, rounding) on every answer only to drop them.
    if (!enabled(request.log.level, failed ? 'warn' : 'info')) return
    const fields = {
      method: request.method,
      route: routeLabel(request),
      url: request.url,
      statusCode: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
      ip: request.ip,
      ...(request.principal !== undefined && { principal: request.principal.name }),
      ...(request.principal?.client !== undefined && { client: request.principal.client })
    }
    // An error here is the response stream failing (the client went away mid-answer), not a status.
    if (failed) request.log.warn({ ...fields, err: error }, 'request errored')
    else request.log.info(fields, 'request completed')
  }
}

/** Every answer carries the request's id in `X-Request-Id`: a client can quote it, an operator find its lines. */
export default fp(async function requestIdPlugin (app) {
  app.addHook('onRequest', function tagRequest (request, reply, done) {
    void reply.header('x-request-id', request.id)
    done()
  })
}, { name: 'request-id' })
