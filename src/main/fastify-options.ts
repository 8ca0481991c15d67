import { maxHeaderSize, type Server } from 'node:http'
import type { FastifyHttpOptions, FastifyRequest } from 'fastify'
import { destination } from 'pino'
import { clientErrorHandler, formatValidationErrors, frameworkErrorHandler } from '../../plugins/app/error-handler.js'
import { AccessLog, requestId } from '../../plugins/app/request-log.js'
import { ajvOptions, sharedSerializer, validatorWithoutBodyCoercion } from '../../plugins/app/schemas.js'
import { redactUrl } from '../../plugins/http/redact-url.js'
import type { Config } from '../config/load-config.js'

/** Hop 0 is the socket's peer. */
function trustHops (hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops
}

/** Fastify's construction options: logging, ids, proxies, schemas, errors, limits and deadlines. */
export function fastifyOptions (
  config: Config, logStream: { write (line: string): void } | undefined
): FastifyHttpOptions<Server> {
  const { timeouts } = config
  return {
    logger: {
      level: config.logLevel,
      // Async log writes: see docs/performance.md#what-the-measurements-decided.
      stream: logStream ?? destination({ dest: 1, sync: false }),
      // Tokens never reach the logs, whatever a serializer or a plugin decides to print.
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization'], censor: '[redacted]' },
      // Fastify's request serializer, with credentials in the query string redacted from the URL.
      serializers: {
        req: (request: FastifyRequest) => ({
          method: request.method,
          url: redactUrl(request.url),
          host: request.host,
          remoteAddress: request.ip,
          ...(request.socket?.remotePort !== undefined && { remotePort: request.socket.remotePort })
        })
      }
    },
    genReqId: requestId,
    requestIdHeader: false,
    logController: new AccessLog(),
    // A hop count as Fastify itself compiles one (its types only name the other forms).
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    ajv: ajvOptions,
    // JSON bodies are validated as sent, without type coercion; compiled schemas are shared between apps
    // (see plugins/app/schemas.ts).
    schemaController: {
      compilersFactory: { buildValidator: validatorWithoutBodyCoercion, buildSerializer: sharedSerializer }
    },
    schemaErrorFormatter: formatValidationErrors,
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    // Drained requests are answered by the errors plugin, in the Error shape.
    return503OnClosing: false,
    bodyLimit: config.bodyLimit,
    // A long id still reaches validation (a 400): past the router's default of 100 it would answer 414 itself.
    routerOptions: { maxParamLength: maxHeaderSize },
    // The store plugin may wait for a PostgreSQL still starting: Fastify's 10 s plugin deadline must not cut that
    // short.
    pluginTimeout: Math.max(10_000, config.pgStartupTimeoutMs + config.pgConnectTimeoutMs + 10_000),
    // A slow client cannot hold a connection: every phase has a deadline.
    requestTimeout: timeouts.request,
    connectionTimeout: timeouts.connection,
    keepAliveTimeout: timeouts.keepAlive,
    http: {
      // Node would answer a request without Host with a bare 400; the requests plugin answers it in the Error shape.
      requireHostHeader: false,
      headersTimeout: timeouts.headers,
      requestTimeout: timeouts.request,
      // Node checks those deadlines on this interval (30 s by default): check often enough to honour them.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(timeouts.headers / 2)))
    }
  }
}
