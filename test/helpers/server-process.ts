import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { TOKEN } from './app.js'
import type { Cleanup } from './cleanup.js'

/** The compiled server next to this compiled helper: the same build the tests run. */
export const SERVER_JS = fileURLToPath(new URL('../../src/main/server.js', import.meta.url))

/**
 * The server's whole start-up banner for a person (LOG_FORMAT=pretty, on stderr): `plant-store is
 * listening on http://HOST:PORT` (the base URL, group 1), the lines under it, and the blank line that ends it.
 */
const BANNER = /^plant-store is listening on (http:\/\/\S+)\n(?:.+\n)*\n/m

/** The banner as a JSON log line (off a terminal, LOG_FORMAT unset or json), on stdout: its `url`. */
const BANNER_LINE = /^\{.*"msg":"plant-store is listening on (http:\/\/[^"]+)".*\}$/m

/**
 * Every line of a stream's output as a JSON log line; throws on a line that is not one (or an unfinished last line).
 */
export function logLines (output: string): LogLine[] {
  const lines = output.split('\n')
  if (lines.pop() !== '') throw new Error(`the last line is unfinished: ${output}`)
  return lines.map((line) => JSON.parse(line) as LogLine)
}

/** The one message a failed start leaves on stderr (a fatal JSON log line off a terminal), as its text. */
export function fatalMessage (stderr: string): string {
  const lines = logLines(stderr)
  if (lines.length !== 1 || lines[0]?.level !== 60) throw new Error(`not one fatal log line: ${stderr}`)
  return String(lines[0].msg)
}

/**
 * The banner's fields, from the JSON log line that announces the start (undefined before it, or for a person's banner).
 */
export function bannerLine (stdout: string): LogLine | undefined {
  const line = BANNER_LINE.exec(stdout)?.[0]
  return line === undefined ? undefined : JSON.parse(line) as LogLine
}

/** How long a start may take before the server is killed and the start fails (ServerOptions.startTimeoutMs). */
const START_TIMEOUT_MS = 30_000

export interface LogLine {
  msg?: string
  req?: { method?: string, url?: string }
  [field: string]: unknown
}

export interface ServerOptions {
  /**
   * Settings over the test defaults: HOST 127.0.0.1, PORT 0, API_TOKENS the test TOKEN, LOG_LEVEL
   * silent, rate limits and load shedding off (so a busy CI machine cannot turn a load test's writes
   * into 429s or 503s), and DATABASE_URL a plants.db in a temporary directory removed when the
   * server stops. `undefined` removes a setting (e.g. API_TOKENS, to have one generated).
   * Nothing else of this process's environment is passed on but PATH and NODE_V8_COVERAGE.
   */
  env?: Record<string, string | undefined>
  /** Runs before the server starts, with its DATABASE_URL: e.g. to seed the database file. */
  beforeStart?: (databaseUrl: string) => void | Promise<void>
  /** Node.js options before the script, e.g. `--cpu-prof`. */
  nodeArgs?: readonly string[]
  /**
   * Sends stdout and stderr to this file instead of pipes (the benchmark: draining a pipe would
   * cost the load generator CPU). `stdout()` then reads the file; `stderr()` and `waitForLog` are
   * not available.
   */
  logFile?: string
  /** Runs the server as this user id (the test runs as root): what a container's unprivileged user meets. */
  uid?: number
  /**
   * Runs this instead of `node <nodeArgs> build/src/main/server.js` (e.g. `npm start`, in `cwd`), with the same
   * settings.
   */
  command?: { file: string, args: readonly string[], cwd: string }
  /** How long the start may take (default 30 s): longer where it waits on others (a migration beside a load). */
  startTimeoutMs?: number
  /**
   * Runs it at a terminal (util-linux `script`: stdin, stdout and stderr a pseudo-terminal), as a
   * person does: everything it writes, both streams, is then read as `stdout()`.
   */
  terminal?: boolean
}

export interface ServerProcess {
  child: ChildProcess
  /** E.g. `http://127.0.0.1:41234`, read from the server's own banner (a JSON log line off a terminal). */
  baseUrl: string
  port: number
  /** The DATABASE_URL it runs on. */
  databaseUrl: string
  /** Resolves with the exit code (null when killed by a signal) once the process and its output are closed. */
  exited: Promise<number | null>
  /** SIGTERM unless it has exited, then its exit code; removes its temporary directory. Runs once. */
  stop: () => Promise<number | null>
  /** Resolves with the first JSON log line (from stdout) that matches; rejects if the server exits first. */
  waitForLog: (matches: (line: LogLine) => boolean) => Promise<LogLine>
  stdout: () => string
  stderr: () => string
}

export interface StartFailure {
  code: number | null
  stdout: string
  stderr: string
}

interface Launched extends Omit<ServerProcess, 'baseUrl' | 'port'> {
  /** The base URL once the whole banner is printed; undefined when the process exits first. */
  banner: Promise<string | undefined>
}

async function launch (options: ServerOptions): Promise<Launched> {
  let dir: string | undefined
  let databaseUrl = options.env?.DATABASE_URL
  if (databaseUrl === undefined) {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-server-'))
    databaseUrl = join(dir, 'plants.db')
  }
  await options.beforeStart?.(databaseUrl)

  const settings: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    // A coverage tool that sets it in the parent sees the servers too; not one run as another user,
    // who may not write the coverage folder (and would say so on stderr), nor another command (npm
    // start runs npm, tsc and dist/, none of them the build/ that coverage measures). Empty, not
    // absent: spawn hands the parent's value on to any child whose env lacks the name.
    NODE_V8_COVERAGE: options.uid === undefined && options.command === undefined ? process.env.NODE_V8_COVERAGE : '',
    HOST: '127.0.0.1',
    PORT: '0',
    API_TOKENS: TOKEN,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_MAX: '0',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    ...options.env,
    DATABASE_URL: databaseUrl
  }
  const env = Object.fromEntries(
    Object.entries(settings).filter((entry): entry is [string, string] => entry[1] !== undefined))
  let file = options.command?.file ?? process.execPath
  let args = options.command?.args ?? [...options.nodeArgs ?? [], SERVER_JS]
  if (options.terminal === true) {
    // `stty -onlcr`: lines end in \n as they do in a pipe, not the terminal's \r\n.
    const command = [file, ...args].map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(' ')
    args = ['--quiet', '--return', '--command', `stty -onlcr; exec ${command}`, '/dev/null']
    file = 'script'
  }
  const cwd = options.command?.cwd

  let child: ChildProcess
  let stdout = ''
  let stderr = ''
  const lines: LogLine[] = []
  const waiters = new Set<{ matches: (line: LogLine) => boolean, resolve: (line: LogLine) => void }>()
  const { logFile } = options
  if (logFile === undefined) {
    child = spawn(file, args, {
      env,
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.uid !== undefined && { uid: options.uid, gid: options.uid })
    })
    let pending = ''
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      const complete = (pending + chunk).split('\n')
      pending = complete.pop() ?? ''
      for (const text of complete) {
        if (!text.startsWith('{')) continue
        const line = JSON.parse(text) as LogLine
        lines.push(line)
        for (const waiter of waiters) {
          if (waiter.matches(line)) {
            waiters.delete(waiter)
            waiter.resolve(line)
          }
        }
      }
    })
  } else {
    const fd = openSync(logFile, 'w')
    child = spawn(file, args, { env, cwd, stdio: ['ignore', fd, fd] })
    closeSync(fd)
  }
  const readStdout = logFile === undefined ? () => stdout : () => readFileSync(logFile, 'utf8')
  // With a log file, stdout and stderr share it.
  const readStderr = logFile === undefined ? () => stderr : readStdout
  let closed = false
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => {
    closed = true
    resolve(code)
  }))

  let stopped: Promise<number | null> | undefined
  const stop = async (): Promise<number | null> => await (stopped ??= (async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    const code = await exited
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
    return code
  })())

  const banner = (async () => {
    const timeoutMs = options.startTimeoutMs ?? START_TIMEOUT_MS
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const url = BANNER.exec(readStderr())?.[1] ?? (BANNER_LINE.exec(readStdout()) ?? BANNER.exec(readStdout()))?.[1]
      if (url !== undefined) return url
      if (closed) return undefined
      await sleep(20)
    }
    child.kill('SIGKILL')
    throw new Error(`the server did not start within ${timeoutMs} ms:\n${readStdout()}${stderr}`)
  })()

  return {
    child,
    databaseUrl,
    banner,
    exited,
    stop,
    waitForLog: async (matches) => {
      if (logFile !== undefined) throw new Error('waitForLog needs the output piped (no logFile)')
      const seen = lines.find(matches)
      if (seen !== undefined) return seen
      return await new Promise((resolve, reject) => {
        waiters.add({ matches, resolve })
        void exited.then(() => { reject(new Error(`the server exited without such a log line:\n${stdout}${stderr}`)) })
      })
    },
    stdout: readStdout,
    stderr: () => stderr
  }
}

/**
 * Starts the real built server (build/src/main/server.js) as a child process with the test settings
 * (see ServerOptions.env) and resolves once it has printed its banner. With `t`, it is stopped and
 * its temporary directory removed when the test ends; without (the benchmark), call `stop()`.
 */
export async function startServer (t: Cleanup | undefined, options: ServerOptions = {}): Promise<ServerProcess> {
  const { banner, ...server } = await launch(options)
  t?.after(async () => { await server.stop() })
  const baseUrl = await banner.catch(async (err: unknown) => {
    await server.stop()
    throw err
  })
  if (baseUrl === undefined) {
    const code = await server.stop()
    throw new Error(
      `the server exited (${code ?? server.child.signalCode}) before listening:\n${server.stdout()}${server.stderr()}`)
  }
  return { ...server, baseUrl, port: Number(new URL(baseUrl).port) }
}

/** Starts the server with settings that must stop its start: resolves with its exit code and output. */
export async function expectStartFailure (options: ServerOptions = {}): Promise<StartFailure> {
  const { banner, ...server } = await launch(options)
  const baseUrl = await banner.finally(server.stop)
  if (baseUrl !== undefined) throw new Error(`the server started (on ${baseUrl}); it was expected to fail`)
  return { code: await server.exited, stdout: server.stdout(), stderr: server.stderr() }
}
