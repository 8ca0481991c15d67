#!/usr/bin/env node
import { readFileSync } from 'node:fs'
import { destination } from 'pino'
import { buildApp } from './app.js'
import { parseCommandLine, USAGE } from './cli.js'
import { runBackup, runCheck, runRestore, runToken, type Output } from './commands.js'
import { ConfigError, StoreOpenError } from './errors.js'
import { loadConfig } from './load-config.js'
import { isPostgresUrl } from './store/postgres/connection.js'

/**
 * How long past SHUTDOWN_GRACE_MS a stopping process may take before it exits regardless: enough
 * to close the database and hand the last log lines to a live log sink, never forever.
 */
const EXIT_MARGIN_MS = 3000

/** Pending log lines beyond this are dropped rather than kept: a log sink that stops reading must not exhaust memory. */
const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024

const output: Output = {
  out: (text) => { process.stdout.write(text) },
  err: (text) => { process.stderr.write(text) }
}

/**
 * Starts plant-store, prints where it listens, and stops it gracefully on SIGINT/SIGTERM: it stops
 * accepting connections, lets in-flight requests finish for up to SHUTDOWN_GRACE_MS (then cuts the
 * connections left), checkpoints and closes the database, and exits 0. A second signal kills it.
 * Whatever happens to the log sink, it exits within SHUTDOWN_DELAY_MS + SHUTDOWN_GRACE_MS + EXIT_MARGIN_MS.
 */
async function serve (): Promise<void> {
  let config
  try {
    config = loadConfig(process.env)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    process.stderr.write(`plant-store: ${err.message}\n`)
    process.exit(1)
  }

  // The log goes to stdout asynchronously (one synchronous write per line cost a quarter of a
  // request, README "Performance"). This process owns the stream so that a shutdown can stop
  // waiting for it: pino flushes it with a blocking retry loop at exit, which never ends when the
  // reader of stdout (a log shipper) has stopped reading.
  const logStream = destination({ dest: 1, sync: false, maxLength: LOG_BUFFER_MAX_BYTES })
  let app
  try {
    app = await buildApp(config, { logStream })
  } catch (err) {
    if (!(err instanceof StoreOpenError)) throw err
    // A PostgreSQL URL may carry a password: name the database without it.
    const where = isPostgresUrl(config.databaseUrl)
      ? `the PostgreSQL database: ${err.message}; nothing was changed`
      : `the database ${config.databaseUrl}: ${err.message}; the file was left untouched`
    process.stderr.write(`plant-store: cannot use ${where}\n`)
    process.exit(1)
  }

  /**
   * Exits without waiting any longer for the log: the stream is marked destroyed first, so pino's
   * exit-time flush (which would retry a full pipe forever) has nothing to do.
   */
  const exitNow = (code: number): void => {
    logStream.destroy()
    process.exit(code)
  }

  let stopping = false
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return
    stopping = true
    app.log.info({ signal, graceMs: config.shutdownGraceMs, delayMs: config.shutdownDelayMs }, 'shutting down: finishing in-flight requests')
    const force = setTimeout(() => {
      app.log.warn('shutdown grace period over: closing the connections left')
      app.server.closeAllConnections()
    }, config.shutdownDelayMs + config.shutdownGraceMs)
    // The hard deadline. The event loop stays free whatever the log sink does (lines are written
    // asynchronously, and a full pipe only makes them wait), so this timer always fires.
    let closed = false
    setTimeout(() => {
      if (!closed) process.stderr.write('plant-store: shutdown deadline passed before the database was closed\n')
      exitNow(closed ? 0 : 1)
    }, config.shutdownDelayMs + config.shutdownGraceMs + EXIT_MARGIN_MS)
    app.close().then(
      () => {
        closed = true
        clearTimeout(force)
        app.log.info('stopped: database checkpointed and closed')
        // Exits once the log is written out ('close' after end()), or at the deadline above.
        logStream.once('close', () => process.exit(0))
        logStream.end()
      },
      (err: unknown) => {
        app.log.error({ err }, 'shutdown failed')
        logStream.once('close', () => process.exit(1))
        logStream.end()
      }
    )
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)

  await app.listen({ port: config.port, host: config.host })
  const base = url(config.host, app.server.address(), config.port)
  const metrics = app.metrics?.address()
  // Printed once to the terminal, not to the log: a newcomer can try the API straight away.
  process.stdout.write(
    `\nplant-store is listening on ${base}\n` +
    `  API docs (Swagger UI): ${base}/docs\n` +
    `  OpenAPI document:      ${base}/openapi.json\n` +
    (metrics === undefined ? '' : `  Prometheus metrics:    ${url(metrics.address, metrics, metrics.port)}/metrics\n`) +
    (config.tokenGenerated
      ? `  No API_TOKENS set: this run accepts the bearer token\n    ${config.tokens[0]}\n`
      : '') +
    '\n'
  )
}

function url (host: string, address: unknown, fallbackPort: number): string {
  const port = typeof address === 'object' && address !== null && 'port' in address ? Number(address.port) : fallbackPort
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`
}

function version (): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  return pkg.version
}

async function main (): Promise<void> {
  let command
  try {
    command = parseCommandLine(process.argv.slice(2))
  } catch (err) {
    process.stderr.write(`plant-store: ${(err as Error).message}\n\n${USAGE}`)
    process.exit(2)
  }
  switch (command.name) {
    case 'serve': return await serve()
    case 'help': process.stdout.write(USAGE); return
    case 'version': process.stdout.write(`plant-store ${version()}\n`); return
    case 'token': process.exitCode = runToken(output, command.entry); return
    case 'check': process.exitCode = await runCheck(process.env, output); return
    case 'backup': process.exitCode = await runBackup(command.file, process.env, output); return
    case 'restore': process.exitCode = runRestore(command.file, process.env, output)
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`plant-store: could not start: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
