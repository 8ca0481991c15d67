#!/usr/bin/env node
import { readFileSync } from 'node:fs'
import { destination } from 'pino'
import type { PrettyOptions } from 'pino-pretty'
import { buildApp } from './app.js'
import { commandUsage, parseCommandLine, USAGE } from './cli.js'
import { runBackup, runCheck, runRestore, runToken, type Output } from './commands.js'
import { ConfigError, StoreOpenError } from './errors.js'
import { loadConfig, SHUTDOWN_EXIT_MARGIN_MS } from './load-config.js'
import { isPostgresUrl } from './store/postgres/connection.js'

/** A log sink that stops reading must not exhaust memory: pending lines beyond this are dropped. */
const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024

const output: Output = {
  out: (text) => { process.stdout.write(text) },
  err: (text) => { process.stderr.write(text) },
  data: process.stdout
}

/** A second signal kills it; whatever the log sink does, it exits within the delay, grace and SHUTDOWN_EXIT_MARGIN_MS. */
async function serve (): Promise<void> {
  let config
  try {
    config = loadConfig(process.env)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    process.stderr.write(`plant-store: ${err.message}\n`)
    process.exit(1)
  }

  // Async log writes (docs/performance.md#what-the-measurements-decided). This process owns the stream:
  // pino's exit-time flush never ends when the reader of stdout has stopped reading.
  const logStream = destination({ dest: 1, sync: false, maxLength: LOG_BUFFER_MAX_BYTES })
  const pretty = (config.logFormat ?? (process.stdout.isTTY ? 'pretty' : 'json')) === 'pretty'
  let app
  try {
    app = await buildApp(config, { logStream: pretty ? await prettyLog(logStream) : logStream })
  } catch (err) {
    if (!(err instanceof StoreOpenError)) throw err
    // A PostgreSQL URL may carry a password: name the database without it.
    const where = isPostgresUrl(config.databaseUrl)
      ? `the PostgreSQL database: ${err.message}; nothing was changed`
      : `the database ${config.databaseUrl}: ${err.message}; the file was left untouched`
    process.stderr.write(`plant-store: cannot use ${where}\n`)
    process.exit(1)
  }

  /** The stream is marked destroyed first, so pino's exit-time flush has nothing to do. */
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
    // The event loop stays free whatever the log sink does, so this deadline always fires.
    let closed = false
    setTimeout(() => {
      if (!closed) process.stderr.write('plant-store: shutdown deadline passed before the database was closed\n')
      exitNow(closed ? 0 : 1)
    }, config.shutdownDelayMs + config.shutdownGraceMs + SHUTDOWN_EXIT_MARGIN_MS)
    app.close().then(
      () => {
        closed = true
        clearTimeout(force)
        app.log.info('stopped: database checkpointed and closed')
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
  // Printed once for a person, on stderr: stdout carries the log only (JSON lines for a collector).
  process.stderr.write(
    `\nplant-store is listening on ${base}\n` +
    `  API docs (Swagger UI): ${base}/docs\n` +
    `  OpenAPI document:      ${base}/openapi.json\n` +
    (metrics === undefined ? '' : `  Prometheus metrics:    ${url(metrics.address, metrics, metrics.port)}/metrics\n`) +
    (config.sandbox === undefined
      ? ''
      : `  SANDBOX=1: a public sandbox. Any bearer token of 16-256 URL-safe characters is a tenant of its own;\n    tenants unused for ${config.sandbox.ttlMs} ms are deleted, at most ${config.sandbox.maxTenants} are kept.\n`) +
    (config.tokenGenerated
      ? `  No API_TOKENS set: this run accepts the bearer token\n    ${config.tokens[0]}\n`
      : '') +
    '\n'
  )
}

/**
 * Log lines for a person at a terminal (LOG_FORMAT=pretty, the default there), written on into
 * `out`. pino-pretty is loaded only then.
 */
async function prettyLog (out: NonNullable<PrettyOptions['destination']>): Promise<{ write (line: string): void }> {
  const { default: pinoPretty } = await import('pino-pretty')
  return pinoPretty({ destination: out, colorize: process.stdout.isTTY, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
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
    case 'help': process.stdout.write(command.command === undefined ? USAGE : commandUsage(command.command)); return
    case 'version': process.stdout.write(`plant-store ${version()}\n`); return
    case 'token': process.exitCode = runToken(output, command.entry); return
    case 'check': process.exitCode = await runCheck(process.env, output); return
    case 'backup': process.exitCode = await runBackup(command.file, process.env, output); return
    case 'restore': process.exitCode = runRestore(command.file, process.env, output, { force: command.force })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`plant-store: could not start: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
