#!/usr/bin/env node
import { buildApp } from './app.js'
import { ConfigError, StoreOpenError } from './errors.js'
import { loadConfig } from './load-config.js'
import { isPostgresUrl } from './store/postgres/connection.js'

/**
 * Starts plant-store, prints where it listens, and stops it gracefully on SIGINT/SIGTERM: it stops
 * accepting connections, lets in-flight requests finish for up to SHUTDOWN_GRACE_MS (then cuts the
 * connections left), checkpoints and closes the database, and exits 0. A second signal kills it.
 */
async function main (): Promise<void> {
  let config
  try {
    config = loadConfig(process.env)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    process.stderr.write(`plant-store: ${err.message}\n`)
    process.exit(1)
  }

  let app
  try {
    app = await buildApp(config)
  } catch (err) {
    if (!(err instanceof StoreOpenError)) throw err
    // A PostgreSQL URL may carry a password: name the database without it.
    const where = isPostgresUrl(config.databaseUrl)
      ? `the PostgreSQL database: ${err.message}; nothing was changed`
      : `the database ${config.databaseUrl}: ${err.message}; the file was left untouched`
    process.stderr.write(`plant-store: cannot use ${where}\n`)
    process.exit(1)
  }
  let stopping = false
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return
    stopping = true
    app.log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: finishing in-flight requests')
    const force = setTimeout(() => {
      app.log.warn('shutdown grace period over: closing the connections left')
      app.server.closeAllConnections()
    }, config.shutdownGraceMs)
    app.close().then(
      () => {
        clearTimeout(force)
        app.log.info('stopped: database checkpointed and closed')
        process.exit(0)
      },
      (err: unknown) => {
        app.log.error({ err }, 'shutdown failed')
        process.exit(1)
      }
    )
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)

  await app.listen({ port: config.port, host: config.host })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : config.port
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  const base = `http://${host}:${port}`
  // Printed once to the terminal, not to the log: a newcomer can try the API straight away.
  process.stdout.write(
    `\nplant-store is listening on ${base}\n` +
    `  API docs (Swagger UI): ${base}/docs\n` +
    `  OpenAPI document:      ${base}/openapi.json\n` +
    (config.tokenGenerated
      ? `  No API_TOKENS set: this run accepts the bearer token\n    ${config.tokens[0]}\n`
      : '') +
    '\n'
  )
}

main().catch((err: unknown) => {
  process.stderr.write(`plant-store: could not start: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
