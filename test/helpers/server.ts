import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { TOKEN } from './app.js'

/** The compiled server next to this compiled helper: the same build the tests run. */
export const SERVER_JS = fileURLToPath(new URL('../../src/server.js', import.meta.url))

const LISTENING = /listening on (http:\/\/\S+)/

export interface RunningServer {
  /** E.g. `http://127.0.0.1:40123`, read from the server's own start-up line. */
  baseUrl: string
  token: string
  /** The SQLite file the server uses (in a temporary directory removed at the end). */
  databaseFile: string
  process: ChildProcess
}

export interface StartServerOptions {
  env?: NodeJS.ProcessEnv
  /** Runs before the server starts, e.g. to seed the database file. */
  beforeStart?: (databaseFile: string) => void | Promise<void>
}

/**
 * Starts the real built server (`dist/src/server.js`) as a child process on a random port with a
 * fresh temporary database and the test token; stops it (SIGTERM) and removes the directory when
 * the test ends.
 */
export async function startServer (
  t: { after: (fn: () => Promise<void>) => void },
  options: StartServerOptions = {}
): Promise<RunningServer> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-server-'))
  const databaseFile = join(dir, 'plants.db')
  await options.beforeStart?.(databaseFile)

  const child = spawn(process.execPath, [SERVER_JS], {
    env: {
      PATH: process.env.PATH,
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: databaseFile,
      API_TOKENS: TOKEN,
      LOG_LEVEL: 'warn',
      ...options.env
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const exited = new Promise<void>((resolve) => { child.once('exit', () => resolve()) })
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
    rmSync(dir, { recursive: true, force: true })
  })

  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let stdout = ''
    const onData = (chunk: string): void => {
      stdout += chunk
      const match = LISTENING.exec(stdout)
      if (match?.[1] !== undefined) {
        child.stdout.off('data', onData)
        resolve(match[1])
      }
    }
    child.stdout.setEncoding('utf8').on('data', onData)
    child.once('exit', (code, signal) => {
      reject(new Error(`the server exited (${code ?? signal}) before listening:\n${stdout}${stderr}`))
    })
  })
  // Keep draining stdout so the child never blocks on a full pipe.
  child.stdout.resume()
  return { baseUrl, token: TOKEN, databaseFile, process: child }
}
