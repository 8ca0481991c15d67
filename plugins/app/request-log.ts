import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { levels } from 'pino'
import { redactUrl } from '../http/redact-url.js'
import { routeLabel } from '../http/route-label.js'
import { REQUEST_ID_PATTERN } from '../../src/schemas/headers.js'

const SANE_REQUEST_ID = new RegExp(REQUEST_ID_PATTERN)

/** The caller's `X-Request-Id` when sane, so one id follows a request through proxies and retries; else a UUID. */
export function requestId (raw: IncomingMessage): string {
  const given = raw.headers['x-request-id']
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID()
}

/** `silent`, pino's level above all, writes none. */
const enabled = (level: string, line: 'info' | 'warn'): boolean =>
  (levels.values[level] ?? Infinity) <= (levels.values[line] ?? 0)

/** Fastify's two lines per request become one access line, naming the caller by its principal, never its token. */
export class AccessLog extends LogController {
  override incomingRequest (request: FastifyRequest): void { request.log.debug({ req: request }, 'incoming request') }

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const failed = error !== null && error !== undefined
    // At LOG_LEVEL=warn nothing is written: do not gather the fields on every answer only to drop them.
    if (!enabled(request.log.level, failed ? 'warn' : 'info')) return
    const fields = {
      method: request.method,
      route: routeLabel(request),
      // A token a client put in the query string by mistake must not reach the log.
      url: redactUrl(request.url),
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

/** A client can quote the id, an operator find its lines. */
export default fp(async function requestIdPlugin (app) {
  app.addHook('onRequest', function tagRequest (request, reply, done) {
    void reply.header('x-request-id', request.id)
    done()
  })
}, { name: 'request-id' })
