#!/usr/bin/env node
import { hostname } from 'node:os'
import { destination } from 'pino'
import type { PrettyOptions } from 'pino-pretty'
import type { buildApp } from './app.js'
import { commandUsage, parseCommandLine, USAGE } from './cli.js'
import { runBackup, runCheck, runRestore, runToken, type Output } from './commands.js'
import { BUILD_INFO } from '../config/build-info.js'
import { runMigrate } from './migrate-command.js'
import { ConfigError, StoreOpenError } from '../lib/errors.js'
import { duration } from '../lib/human.js'
import { loadConfig, SHUTDOWN_EXIT_MARGIN_MS, type Config } from '../config/load-config.js'
import { isPostgresUrl } from '../store/postgres/connection.js'
import { withTrialToken } from '../auth/token-settings.js'

/** A log sink that stops reading must not exhaust memory: pending lines beyond this are dropped. */
const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024

type App = Awaited<ReturnType<typeof buildApp>>

/** A person at a terminal reads both streams: only then may a made-up token be shown (withTrialToken). */
const atTerminal = process.stdout.isTTY && process.stderr.isTTY

const output: Output = {
  out: (text) => { process.stdout.write(text) },
  err: (text) => { process.stderr.write(text) },
  data: process.stdout,
  terminal: atTerminal
}

/** A second signal kills it; whatever the log sink does, it exits within delay + grace + SHUTDOWN_EXIT_MARGIN_MS. */
async function serve (): Promise<void> {
  let config
  try {
    config = withTrialToken(loadConfig(process.env), atTerminal)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    say('fatal', err.message)
    process.exit(1)
  }

  // Async log writes (docs/performance.md#what-the-measurements-decided). This process owns the stream:
  // pino's exit-time flush never ends when the reader of stdout has stopped reading.
  const logStream = destination({ dest: 1, sync: false, maxLength: LOG_BUFFER_MAX_BYTES })
  const pretty = !jsonLines(config.logFormat)
  // Loaded here, not at the top: the other commands (check, backup, token…) need none of Fastify.
  const { buildApp } = await import('./app.js')
  let app
  try {
    app = await buildApp(config, { logStream: pretty ? await prettyLog(logStream) : logStream })
  } catch (err) {
    if (!(err instanceof StoreOpenError)) throw err
    // A PostgreSQL URL may carry a password: name the database without it.
    const where = isPostgresUrl(config.databaseUrl)
      ? `the PostgreSQL database: ${err.message}; nothing was changed`
      : `the database ${config.databaseUrl}: ${err.message}; the file was left untouched`
    say('fatal', `cannot use ${where}`)
    process.exit(1)
  }

  stopOnSignals(app, config, logStream)

  await app.listen({ port: config.port, host: config.host })
  const base = url(config.host, app.server.address(), config.port)
  const metrics = app.metrics?.address()
  const banner: Banner = {
    url: base,
    docs: `${base}/docs`,
    openapi: `${base}/openapi.json`,
    ...(metrics !== undefined && { metrics: `${url(metrics.address, metrics, metrics.port)}/metrics` }),
    ...(config.sandbox !== undefined && {
      sandbox: { ttl: duration(config.sandbox.ttlMs), maxTenants: config.sandbox.maxTenants }
    }),
    ...(config.tokenGenerated && { generatedToken: config.tokens[0] })
  }
  // The banner is written whatever LOG_LEVEL says: it may hold the only token that works.
  if (pretty) {
    process.stderr.write(bannerText(banner))
    return
  }
  // Node's own warnings (a deprecation in a dependency, say) become log lines instead of plain text on stderr.
  process.removeAllListeners('warning')
  process.on('warning', (warning) => { app.log.warn({ err: warning }, `node: ${warning.message}`) })
  logStream.write(logLine(30, `plant-store is listening on ${base}`, banner))
}

/** SIGINT or SIGTERM: finish in-flight requests, close the app, exit 0 (1 if the close failed or took too long). */
function stopOnSignals (app: App, config: Config, logStream: ReturnType<typeof destination>): void {
  let stopping = false
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return
    stopping = true
    app.log.info(
      { signal, graceMs: config.shutdownGraceMs, delayMs: config.shutdownDelayMs },
      'shutting down: finishing in-flight requests'
    )
    const force = setTimeout(() => {
      app.log.warn('shutdown grace period over: closing the connections left')
      app.server.closeAllConnections()
    }, config.shutdownDelayMs + config.shutdownGraceMs)
    // The event loop stays free whatever the log sink does, so this deadline always fires.
    let closed = false
    setTimeout(() => {
      if (!closed) say('error', 'shutdown deadline passed before the database was closed')
      // Destroyed first, so pino's exit-time flush has nothing to do.
      logStream.destroy()
      process.exit(closed ? 0 : 1)
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
}

/** What the start-up announces: where to go, and what a person must know before the first request. */
interface Banner {
  url: string
  docs: string
  openapi: string
  metrics?: string
  sandbox?: { ttl: string, maxTenants: number }
  generatedToken?: string
}

/** For a person, on stderr: stdout carries the log only. */
function bannerText ({ url, docs, openapi, metrics, sandbox, generatedToken }: Banner): string {
  return `\nplant-store is listening on ${url}\n` +
    `  API docs (Swagger UI): ${docs}\n` +
    `  OpenAPI document:      ${openapi}\n` +
    (metrics === undefined ? '' : `  Prometheus metrics:    ${metrics}\n`) +
    (sandbox === undefined
      ? ''
      : '  SANDBOX=1: a public sandbox. Any bearer token of 16-256 URL-safe characters is a tenant of its own;\n' +
        `    tenants unused for ${sandbox.ttl} are deleted, at most ${sandbox.maxTenants} are kept.\n`) +
    (generatedToken === undefined
      ? ''
      : `  No API_TOKENS set: this run accepts the bearer token\n    ${generatedToken}\n`) +
    '\n'
}

/**
 * LOG_FORMAT, else JSON off a terminal; read from the environment too when the configuration could not be loaded
 * (the message saying why is a log line too).
 */
function jsonLines (format: string | undefined = process.env.LOG_FORMAT): boolean {
  return format === 'json' || (format !== 'pretty' && !process.stdout.isTTY)
}

/** A log line as pino writes them. */
function logLine (level: number, msg: string, fields: object): string {
  return `${JSON.stringify({ level, time: Date.now(), pid: process.pid, hostname: hostname(), msg, ...fields })}\n`
}

/** The process's own message, on stderr: a JSON line where a collector merging both streams reads only JSON. */
function say (level: 'fatal' | 'error', message: string, err?: Error): void {
  if (!jsonLines()) {
    process.stderr.write(`plant-store: ${message}\n`)
    return
  }
  const details = err === undefined ? {} : { err: { type: err.name, message: err.message, stack: err.stack } }
  process.stderr.write(logLine(level === 'fatal' ? 60 : 50, message, details))
}

/** An uncaught bug ends the process (exit 1) as a JSON log line, not Node's stack trace, but at a terminal. */
function crashAsLogLine (): void {
  if (!jsonLines()) return
  process.on('uncaughtException', (err) => {
    say('fatal', `crashed: ${err.message}`, err)
    process.exit(1)
  })
}

/** Log lines for a person (LOG_FORMAT=pretty); pino-pretty is loaded only then. */
async function prettyLog (out: NonNullable<PrettyOptions['destination']>): Promise<{ write (line: string): void }> {
  const { default: pinoPretty } = await import('pino-pretty')
  return pinoPretty({
    destination: out,
    colorize: process.stdout.isTTY,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname'
  })
}

function url (host: string, address: unknown, fallbackPort: number): string {
  const port =
    typeof address === 'object' && address !== null && 'port' in address ? Number(address.port) : fallbackPort
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`
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
    case 'serve': crashAsLogLine(); return await serve()
    case 'help': process.stdout.write(command.command === undefined ? USAGE : commandUsage(command.command)); return
    // The commit tells two builds of one version apart.
    case 'version': process.stdout.write(`plant-store ${BUILD_INFO.version} (commit ${BUILD_INFO.commit})\n`); return
    case 'token': process.exitCode = runToken(output, command.entry); return
    case 'check': process.exitCode = await runCheck(process.env, output); return
    case 'migrate': process.exitCode = await runMigrate(process.env, output); return
    case 'backup': process.exitCode = await runBackup(command.file, process.env, output); return
    case 'restore': process.exitCode = runRestore(command.file, process.env, output, { force: command.force })
  }
}

main().catch((err: unknown) => {
  say('fatal', `could not start: ${err instanceof Error ? err.message : String(err)}`)
  process.exit(1)
})
