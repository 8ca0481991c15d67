/**
 * `npm run bench:startup`: what the optional features cost a process that does not use them, and
 * one that does: time from spawn to the "listening" banner, and resident memory once idle, for the
 * built server with nothing optional, with METRICS_PORT, and with OTEL_EXPORTER_OTLP_ENDPOINT.
 *
 *   npm run bench:startup -- [--runs 10]
 */
import { spawn } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { median, SERVER_ENV, SERVER_NODE_FLAGS } from './measure.js'

const SERVER = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main', 'server.js')
const TOKEN = 'startup-bench-token-0123456789abcdef0123'

const VARIANTS: ReadonlyArray<[string, Record<string, string>]> = [
  ['nothing optional', {}],
  ['METRICS_PORT', { METRICS_PORT: '0' }],
  // Nothing listens there: no request is made, so nothing is exported; only the loading is measured.
  ['OTEL_EXPORTER_OTLP_ENDPOINT', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }]
]

const kib = (status: string,
  field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN)

async function once (env: Record<string, string>): Promise<{ startMs: number, rssMb: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-startup-'))
  const log = join(dir, 'out.log')
  const fd = openSync(log, 'w')
  const started = process.hrtime.bigint()
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, SERVER], {
    env: {
      PATH: process.env.PATH,
      ...SERVER_ENV,
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: join(dir, 'plants.db'),
      API_TOKENS: TOKEN,
      LOG_LEVEL: 'warn',
      ...env
    },
    stdio: ['ignore', fd, fd]
  })
  closeSync(fd)
  try {
    while (!readFileSync(log, 'utf8').includes('listening on')) {
      if (child.exitCode !== null) throw new Error(readFileSync(log, 'utf8'))
      await sleep(5)
    }
    const startMs = Number(process.hrtime.bigint() - started) / 1e6
    // Idle for a second: what the process keeps, not the peak of loading it.
    await sleep(1000)
    const rssMb = kib(readFileSync(`/proc/${child.pid}/status`, 'utf8'), 'VmRSS') / 1024
    return { startMs, rssMb }
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
    rmSync(dir, { recursive: true, force: true })
  }
}

async function main (): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '10' } } })
  const runs = Number(values.runs)
  const results = new Map<string, Array<{ startMs: number, rssMb: number }>>(VARIANTS.map(([name]) => [name, []]))
  // Interleaved, so a busy moment of the machine spreads over every variant alike.
  for (let run = 0; run < runs; run++) {
    for (const [name, env] of VARIANTS) results.get(name)?.push(await once(env))
  }
  process.stdout.write(`\n${runs} starts each, medians (${process.version}, ${process.platform})\n\n`)
  process.stdout.write('| configuration | start to listening, ms | idle RSS, MB |\n|---|---|---|\n')
  for (const [name, samples] of results) {
    process.stdout.write(
      `| ${name} | ${median(samples.map((sample) => sample.startMs)).toFixed(0)} ` +
        `| ${median(samples.map((sample) => sample.rssMb)).toFixed(1)} |\n`)
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`startup bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exit(1)
})
