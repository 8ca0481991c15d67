import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const serverPath = fileURLToPath(new URL('../../src/server.js', import.meta.url))

function start (env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [serverPath], {
    env: { PATH: process.env.PATH, PORT: '0', LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const match = /listening on (http:\/\/\S+)/.exec(stdout)
      if (match?.[1] !== undefined && /\n\n$/.test(stdout)) resolve(match[1])
    })
    void exited.then((code) => reject(new Error(`server exited with ${code}: ${stderr}`)))
  })
  // Not every test waits for listening (a start that must fail): keep its rejection handled.
  listening.catch(() => undefined)
  return { child, listening, exited, output: () => ({ stdout, stderr }) }
}

test('the server prints where it listens, the docs URL and a generated token that works; SIGTERM stops it cleanly', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-server-'))
  const server = start({ DATABASE_URL: join(dir, 'plants.db') })
  const base = await server.listening
  const { stdout } = server.output()
  assert.match(stdout, new RegExp(`API docs \\(Swagger UI\\): ${base}/docs\\n`))
  const token = /accepts the bearer token\n {4}(\S+)\n/.exec(stdout)?.[1]
  assert.ok(token !== undefined)

  const authorized = await fetch(`${base}/plants/1`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })
  assert.equal(authorized.status, 404)
  const health = await fetch(`${base}/health`)
  assert.deepEqual(await health.json(), { status: 'ok' })

  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)
})

test('configured tokens are not printed', async () => {
  const token = 'configured-token-0123456789abcdef0123'
  const server = start({ DATABASE_URL: ':memory:', API_TOKENS: token })
  await server.listening
  assert.doesNotMatch(server.output().stdout, /configured-token/)
  server.child.kill('SIGINT')
  assert.equal(await server.exited, 0)
})

test('a bad configuration value stops the start with a clear message and exit code 1', async () => {
  const server = start({ PORT: 'eighty' })
  assert.equal(await server.exited, 1)
  assert.equal(server.output().stderr, 'plant-store: invalid configuration: env/PORT must be integer\n')
})
