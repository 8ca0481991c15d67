import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * How `npm start` runs the service (package.json; a test keeps the two the same), and so how the
 * benchmark runs plant-store and the minimal service. The flags bound peak RSS (a small young
 * generation, old space growing by half its live size, one malloc arena): see
 * docs/performance.md#what-the-measurements-decided.
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--heap-growing-percent=50']
export const SERVER_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '1' }
/**
 * The load's keep-alive connections, unless --connections says otherwise: the timed runs' and the instruction
 * counts' alike, since what a request costs grows with how many wait (the pool's queue).
 */
export const CONNECTIONS = 32
/**
 * A rate limit per window and a number of requests per connection that no run comes near, and still a small integer
 * to V8 (below 2^30): a production limit's `RateLimit-*` numbers are, and a larger one is formatted through the slow
 * path of every header it is written to.
 */
export const UNREACHABLE = 2 ** 30 - 1

/** The middle value (the upper of the two middle ones for an even count); NaN for none. */
export function median (values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

/**
 * The order of round `round` (from 1) of `runs`: each round starts one later, so over as many rounds as runs each
 * takes every place once, and none is always measured first or last (after a checkpoint, say).
 */
export function roundOrder<T> (runs: readonly T[], round: number): T[] {
  const start = (round - 1) % runs.length
  return [...runs.slice(start), ...runs.slice(0, start)]
}

/** CPU time (user + system) process `pid` has used, in seconds, or null where /proc is not there. */
export function cpuSeconds (pid: number): number | null {
  try {
    // Fields 14 and 15 of /proc/<pid>/stat, counted after the parenthesised command name; USER_HZ is 100.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return null
  }
}

/** Peak resident memory (VmHWM) of process `pid` in MB, or null where /proc is not there. */
export function peakRssMb (pid: number): number | null {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match?.[1] === undefined ? null : Number(match[1]) / 1024
  } catch {
    return null
  }
}

/**
 * Starts `command` with `args`, its output into `logFile` (a file, not a pipe: draining a pipe
 * would cost the load generator CPU), and resolves once it prints `listening on http://host:port`
 * (plain, or in a JSON log line's msg), with that URL: the reference services, and plant-store
 * under valgrind. A process that exits first, or stays silent for `timeoutMs`, is killed and the
 * start fails with the end of its output.
 */
export async function startListening (command: string, args: readonly string[], env: NodeJS.ProcessEnv, logFile: string,
  timeoutMs: number): Promise<{ child: ChildProcess, url: string }> {
  const fd = openSync(logFile, 'w')
  const child = spawn(command, args, { env, stdio: ['ignore', fd, fd] })
  closeSync(fd)
  let exited = false
  child.once('exit', () => { exited = true })
  for (let waited = 0; waited < timeoutMs; waited += 20) {
    const url = /listening on (http:\/\/[^\s"]+)/.exec(readFileSync(logFile, 'utf8'))?.[1]
    if (url !== undefined) return { child, url }
    if (exited) break
    await sleep(20)
  }
  child.kill('SIGKILL')
  throw new Error(`${args.at(-1) ?? command} did not start; its output:\n${readFileSync(logFile, 'utf8').slice(-2000)}`)
}
