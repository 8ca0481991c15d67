import { spawn, type ChildProcessByStdio } from 'node:child_process'
import type { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { TOKEN } from './app.js'

const serverPath = fileURLToPath(new URL('../../src/server.js', import.meta.url))

export interface LogLine {
  msg?: string
  req?: { method?: string, url?: string }
  [field: string]: unknown
}

export interface ServerProcess {
  child: ChildProcessByStdio<null, Readable, Readable>
  /** e.g. http://127.0.0.1:41234 */
  base: string
  port: number
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>
  /** Resolves with the first log line (JSON, from stdout) that matches. */
  waitForLog: (matches: (line: LogLine) => boolean) => Promise<LogLine>
  stderr: () => string
}

/**
 * Starts the built server (dist/src/server.js) as a child process on port 0 with these settings
 * (token TOKEN; rate limits and load shedding off unless given, so a busy CI machine cannot turn
 * a load test's writes into 503s) and resolves once it prints where it listens.
 */
export async function startServer (env: NodeJS.ProcessEnv): Promise<ServerProcess> {
  const child = spawn(process.execPath, [serverPath], {
    env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', API_TOKENS: TOKEN, LOG_LEVEL: 'silent', RATE_LIMIT_MAX: '0', MAX_EVENT_LOOP_DELAY_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))

  const lines: LogLine[] = []
  const waiters: Array<{ matches: (line: LogLine) => boolean, resolve: (line: LogLine) => void }> = []
  let pending = ''
  let listening: (base: string) => void = () => undefined
  const started = new Promise<string>((resolve, reject) => {
    listening = resolve
    void exited.then((code) => reject(new Error(`server exited with ${code} before listening: ${stderr}`)))
  })
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString()
    const complete = pending.split('\n')
    pending = complete.pop() ?? ''
    for (const text of complete) {
      const address = /listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(text)
      if (address?.[1] !== undefined) listening(address[1])
      if (!text.startsWith('{')) continue
      const line = JSON.parse(text) as LogLine
      lines.push(line)
      for (const waiter of [...waiters]) {
        if (waiter.matches(line)) {
          waiters.splice(waiters.indexOf(waiter), 1)
          waiter.resolve(line)
        }
      }
    }
  })

  const base = await started
  return {
    child,
    base,
    port: Number(new URL(base).port),
    exited,
    waitForLog: (matches) => {
      const seen = lines.find(matches)
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => { waiters.push({ matches, resolve }) })
    },
    stderr: () => stderr
  }
}
