import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Registry } from 'prom-client'
import { BUILD_INFO } from '../../src/config/build-info.js'
import { LOAD_SHEDDING_CODES, ServiceError } from '../../src/lib/errors.js'
import { clientErrorHandler, errorBody, writeErrorResponse } from './error-handler.js'
import { RequestHistogram } from '../../src/metrics/histogram.js'
import { routeLabel } from '../http/route-label.js'
import { storeOperations, type OperationObserver, type StoreOperation } from '../../src/store/instrumented.js'
import { isPostgresUrl } from '../../src/store/postgres/connection.js'
import type { PoolStats } from '../../src/store/pool-stats.js'

type PromClient = typeof import('prom-client')

export const METRIC_PREFIX = 'plantstore_'

export type ServiceMetrics = Awaited<ReturnType<typeof startMetrics>>

declare module 'fastify' {
  interface FastifyInstance {
    /** Undefined unless METRICS_PORT is set: then nothing is measured, and prom-client is never loaded. */
    metrics: ServiceMetrics | undefined
  }
}

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
const SYNC_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]

/** The process, its version and every request: duration by route, 429s and 503s by cause. */
function requestMetrics (app: FastifyInstance, client: PromClient, registry: Registry): void {
  client.collectDefaultMetrics({ register: registry })
  // prom-client's `_total` gauges (sums of the by-type ones) break Prometheus' naming: promtool refuses them.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
    registry.removeSingleMetric(name)
  }

  // Which build runs where (a rollout's progress, two builds of one version told apart).
  new client.Gauge({
    name: `${METRIC_PREFIX}build_info`,
    help: 'Always 1; the labels say which plant-store runs (version, the commit it was built from) on which Node.js',
    labelNames: ['version', 'commit', 'node_version'],
    registers: [registry]
  }).set({ version: BUILD_INFO.version, commit: BUILD_INFO.commit, node_version: process.version }, 1)

  // The two histograms observed on every request are the lean ones (src/metrics/histogram.ts).
  const requestDuration = new RequestHistogram('http_request_duration_seconds',
    'Time from a request\'s arrival to its answer, by method, route template and status', HTTP_BUCKETS, registry)
  app.addHook('onResponse', function measureRequest (request, reply, done) {
    const route = routeLabel(request)
    const labels = { method: request.method, route, status_code: reply.statusCode }
    requestDuration.series(`${request.method} ${reply.statusCode} ${route}`, labels).observe(reply.elapsedTime / 1000)
    done()
  })
  const rateLimited = new client.Counter({
    name: `${METRIC_PREFIX}rate_limit_rejections_total`,
    help: 'Requests answered 429 by the rate limit, by what was counted (a token, or an IP without a valid token)',
    labelNames: ['client'],
    registers: [registry]
  })
  const shed = new client.Counter({
    name: `${METRIC_PREFIX}load_shedding_total`,
    help: 'Requests refused with 503 to protect the service, by reason: overloaded (event loop or memory), ' +
      'shutting-down (draining), connection-spent (MAX_REQUESTS_PER_SOCKET)',
    labelNames: ['reason'],
    registers: [registry]
  })
  for (const reason of LOAD_SHEDDING_CODES) shed.inc({ reason }, 0)
  for (const kind of ['token', 'ip']) rateLimited.inc({ client: kind }, 0)
  app.addHook('onError', function countRefusals (request, _reply, error, done) {
    if (error instanceof ServiceError) {
      if (error.code === 'rate-limited') rateLimited.inc({ client: request.principal === undefined ? 'ip' : 'token' })
      else if (LOAD_SHEDDING_CODES.has(error.code)) shed.inc({ reason: error.code })
    }
    done()
  })
}

/** Every store operation's duration, by operation and outcome, its series made once. */
function storeMetrics (registry: Registry, resources: FastifyInstance['resources']): OperationObserver {
  const storeDuration = new RequestHistogram(`${METRIC_PREFIX}store_operation_duration_seconds`,
    'Time a store operation took, from the call to its answer (for SQLite writes: committed and, with full sync, on ' +
      'disk)', STORE_BUCKETS, registry)
  const storeSeries = new Map(storeOperations(resources).map((operation) => [operation, {
    ok: storeDuration.series(`${operation} ok`, { operation, outcome: 'ok' }),
    error: storeDuration.series(`${operation} error`, { operation, outcome: 'error' })
  }] as const))
  return (operation: StoreOperation) => {
    // performance.now(): a double, where hrtime.bigint() would allocate two BigInts per operation.
    const started = performance.now()
    return (error) => {
      const series = storeSeries.get(operation)
      ;(error === undefined ? series?.ok : series?.error)?.observe((performance.now() - started) / 1000)
    }
  }
}

/** The metrics listener: `GET /metrics` and nothing else, closed with the app. */
async function serveMetrics (app: FastifyInstance, registry: Registry, settings: { port: number, host: string }) {
  // The API's slow-client deadlines, so a scraper's port is no easier to hold open than the API's.
  const { timeouts } = app.config
  const server = createServer({
    headersTimeout: timeouts.headers,
    requestTimeout: timeouts.request,
    keepAliveTimeout: timeouts.keepAlive,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(timeouts.headers / 2)))
  }, (request, response) => {
    if ((request.url ?? '').split('?')[0] !== '/metrics') {
      writeErrorResponse(response, errorBody(404, 'Not found: metrics are at /metrics'))
      return
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const message = `Method ${request.method ?? ''} is not allowed on /metrics (it allows GET, HEAD)`
      writeErrorResponse(response, errorBody(405, message), { allow: 'GET, HEAD' })
      return
    }
    registry.metrics().then((text) => {
      response.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' })
      response.end(request.method === 'HEAD' ? undefined : text)
    }, (err: unknown) => {
      app.log.error({ err }, 'metrics: collecting failed')
      writeErrorResponse(response, errorBody(500, 'Collecting the metrics failed'))
    })
  })
  server.setTimeout(timeouts.connection)
  // Malformed requests and deadlines passed are answered in the Error shape, as on the API port.
  server.on('clientError', clientErrorHandler)
  server.listen(settings.port, settings.host)
  await once(server, 'listening')
  app.log.info({ address: server.address() }, 'metrics: serving GET /metrics')
  app.addHook('onClose', async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return server
}

/** On their own listener, never the API port, so neither clients nor the internet see them and no token guards them. */
export default fp(async function metricsPlugin (app) {
  const settings = app.config.metrics
  app.decorate('metrics', settings === undefined ? undefined : await startMetrics(app, settings))
}, { name: 'metrics', dependencies: ['config', 'resources'] })

async function startMetrics (app: FastifyInstance, settings: { port: number, host: string }) {
  const client = await import('prom-client')
  const registry = new client.Registry()
  requestMetrics(app, client, registry)
  const storeOperation = storeMetrics(registry, app.resources)
  // On PostgreSQL these would only ever be zeros: they are not exported at all.
  const sqlite = isPostgresUrl(app.config.databaseUrl) ? undefined : sqliteMetrics(client, registry)
  const server = await serveMetrics(app, registry, settings)
  return {
    /** So a plugin can create metrics without importing prom-client (which would load it always). */
    client,
    registry,
    storeOperation,
    groupCommit: (writes: number) => { sqlite?.batchSize.observe(writes) },
    walSync: (ms: number) => { sqlite?.syncDuration.observe(ms / 1000) },
    walCheckpoint: (thread: 'worker' | 'loop', ms: number) => { sqlite?.checkpoints[thread].observe(ms / 1000) },
    address: () => server.address() as AddressInfo
  }
}

/** The readiness probe's verdict at each scrape and, on PostgreSQL, every pool's connections by state. */
export function databaseMetrics (
  { client, registry }: ServiceMetrics,
  database: { up: () => Promise<boolean>, ready: () => Promise<boolean>, pools?: () => PoolStats[] }
): void {
  // The pools are read before the probe takes a connection of its own: a scrape sees them as the requests leave them.
  if (database.pools !== undefined) poolMetrics({ client, registry }, database.pools)
  registry.registerMetric(new client.Gauge({
    name: `${METRIC_PREFIX}database_up`,
    help: 'Whether the database answers the readiness probe (1) or not (0), probed at each scrape',
    registers: [],
    async collect () { this.set(await database.up() ? 1 : 0) }
  }))
  registry.registerMetric(new client.Gauge({
    name: `${METRIC_PREFIX}ready`,
    help: 'Whether GET /health/ready would answer 200 (1): not draining, not shedding load, the database answers',
    registers: [],
    async collect () { this.set(await database.ready() ? 1 : 0) }
  }))
}

function poolMetrics ({ client, registry }: Pick<ServiceMetrics, 'client' | 'registry'>, pools: () => PoolStats[]) {
  registry.registerMetric(new client.Gauge({
    name: `${METRIC_PREFIX}db_pool_connections`,
    help: 'PostgreSQL pool connections by pool (api, webhooks, dispatcher, sandbox, …) and state: idle, busy ' +
      '(checked out), waiting (callers queued for a connection of a full pool)',
    labelNames: ['pool', 'state'],
    registers: [],
    collect () {
      for (const stats of pools()) {
        for (const state of ['idle', 'busy', 'waiting'] as const) this.set({ pool: stats.pool, state }, stats[state])
      }
    }
  }))
  registry.registerMetric(new client.Gauge({
    name: `${METRIC_PREFIX}db_pool_max_connections`,
    help: 'Connections each PostgreSQL pool may open at most (PG_POOL_MAX, or the pool\'s own bound)',
    labelNames: ['pool'],
    registers: [],
    collect () {
      for (const stats of pools()) this.set({ pool: stats.pool }, stats.max)
    }
  }))
}

function sqliteMetrics (client: PromClient, registry: Registry) {
  const batchSize = new client.Histogram({
    name: `${METRIC_PREFIX}sqlite_group_commit_batch_size`,
    help: 'Writes committed together in one SQLite transaction (and, with full sync, made durable by one fdatasync)',
    buckets: BATCH_BUCKETS,
    registers: [registry]
  })
  const syncDuration = new client.Histogram({
    name: `${METRIC_PREFIX}sqlite_wal_fdatasync_duration_seconds`,
    help: 'Time one fdatasync of the SQLite WAL took (SQLITE_SYNCHRONOUS=full): the floor of every write\'s latency',
    buckets: SYNC_BUCKETS,
    registers: [registry]
  })
  const checkpointDuration = new client.Histogram({
    name: `${METRIC_PREFIX}sqlite_wal_checkpoint_duration_seconds`,
    help: 'Time one SQLite WAL checkpoint took, by thread: "worker" runs beside the requests, "loop" held the event ' +
      'loop (the WAL had outgrown the worker\'s checkpoints)',
    labelNames: ['thread'],
    buckets: SYNC_BUCKETS,
    registers: [registry]
  })
  return {
    batchSize,
    syncDuration,
    checkpoints: { worker: checkpointDuration.labels('worker'), loop: checkpointDuration.labels('loop') }
  }
}
