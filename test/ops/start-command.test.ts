import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { chmodSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { SERVER_ENV, SERVER_NODE_FLAGS } from '../../bench/measure.js'
import { checkoutCommit } from '../helpers/build-info.js'
import { startServer } from '../helpers/server-process.js'

const REPO = fileURLToPath(new URL('../../..', import.meta.url))

const scripts = (): Record<string, string> =>
  (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts

/** `npm start`'s command, `VAR=value … exec node <flags> dist/src/main/server.js`, taken apart. */
function startCommand (): { env: Record<string, string>, nodeArgs: string[], script: string } {
  const words = (scripts().start ?? '').trim().split(/\s+/)
  const env: Record<string, string> = {}
  while (words[0]?.includes('=') === true) {
    const [name, value] = (words.shift() as string).split('=') as [string, string]
    env[name] = value
  }
  // exec: the shell npm starts becomes node, so a signal npm passes on reaches the server.
  assert.equal(words.shift(), 'exec', 'npm start execs node')
  assert.equal(words.shift(), 'node', 'npm start runs node')
  const script = words.pop() ?? ''
  return { env, nodeArgs: words, script }
}

test('the benchmark runs the service as npm start does: the same node flags and environment', () => {
  const { env, nodeArgs, script } = startCommand()
  assert.equal(script, 'dist/src/main/server.js')
  assert.deepEqual(nodeArgs, SERVER_NODE_FLAGS)
  assert.deepEqual(env, SERVER_ENV)
})

test('this Node.js accepts npm start\'s flags: the service starts and answers with them', async (t) => {
  const { env, nodeArgs } = startCommand()
  const server = await startServer(t, { nodeArgs, env })
  const response = await fetch(`${server.baseUrl}/health`)
  assert.equal(response.status, 200)
})

test('every script that builds dist/ makes the package\'s bin executable after it, and records the commit', () => {
  const building = Object.entries(scripts()).filter(([, command]) => /\btsc\b.*tsconfig\.build\.json/.test(command))
  assert.deepEqual(building.map(([name]) => name).sort(), ['build', 'prestart', 'test', 'test:upgrade'])
  for (const [name, command] of building) {
    assert.match(command, /tsconfig\.build\.json[^&]*&& node scripts\/bin-mode\.mjs( &&|$)/, name)
    assert.match(command, /&& node scripts\/build-info\.mjs dist( build)?( &&|$)/, name)
  }
  // build/ too: the tests' own build reports its commit as dist/ does.
  assert.match(scripts()['build:test'] ?? '', /^tsc -p tsconfig\.json && node scripts\/build-info\.mjs build$/)
  for (const name of ['test', 'test:upgrade']) {
    assert.match(scripts()[name] ?? '', /&& node scripts\/build-info\.mjs dist build &&/, name)
  }
})

/** Whether a process with this pid is still there. */
function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

test('SIGTERM to npm start\'s own pid drains and stops the server, and leaves no process behind; a current ' +
  'dist/ is not rebuilt', { timeout: 120_000 }, async (t) => {
  // The first start builds dist/ if it is missing or older than the sources (prestart: tsc -b), and
  // makes the bin executable again: as a dist/ that tsc wrote anew leaves it (0644), `npx plant-store`
  // could not run it.
  assert.match(scripts().prestart ?? '',
    /^tsc -b tsconfig\.build\.json && node scripts\/bin-mode\.mjs && node scripts\/build-info\.mjs dist$/)
  const bin = join(REPO, 'dist/src/main/server.js')
  chmodSync(bin, 0o644)
  const server = await startServer(t, {
    command: { file: 'npm', args: ['start', '--silent'], cwd: REPO },
    env: { LOG_LEVEL: 'info' }
  })
  const listening = await server.waitForLog((line) => typeof line.pid === 'number')
  const serverPid = listening.pid as number
  assert.notEqual(serverPid, server.child.pid, 'the server runs in its own process, under npm')
  assert.equal((await fetch(`${server.baseUrl}/health`)).status, 200)
  const built = statSync(bin).mtimeMs
  assert.equal(statSync(bin).mode & 0o777, 0o755)

  process.kill(server.child.pid as number, 'SIGTERM')
  await server.waitForLog((line) => line.msg === 'shutting down: finishing in-flight requests')
  await server.waitForLog((line) => line.msg === 'stopped: database checkpointed and closed')
  await server.exited
  assert.equal(alive(serverPid), false, `the server (pid ${serverPid}) outlived npm`)

  // Started again on a current dist/: nothing is compiled again.
  const again = await startServer(t, { command: { file: 'npm', args: ['start', '--silent'], cwd: REPO } })
  assert.equal(statSync(bin).mtimeMs, built)
  assert.equal(await again.stop(), 0)
})

test('from a clone, npx plant-store runs the package\'s bin (dist/, built by npm start ' +
  'above), as the README says', async () => {
  assert.match(readFileSync(join(REPO, 'README.md'), 'utf8'),
    /run it as `npx plant-store …` or\n`node dist\/src\/main\/server\.js …`/)
  // Without coverage: npx and dist/ are not the build/ that it measures.
  const run = async (file: string, args: string[], options: { cwd: string }): Promise<{ stdout: string }> =>
    await promisify(execFile)(file, args, { ...options, env: { ...process.env, NODE_V8_COVERAGE: '' } })
  // --offline: the package's own bin, never one fetched from the registry.
  const version = await run('npx', ['--offline', 'plant-store', '--version'], { cwd: REPO })
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }
  assert.equal(version.stdout, `plant-store ${pkg.version} (commit ${checkoutCommit()})\n`)
  const help = await run('npx', ['--offline', 'plant-store', 'token', '--help'], { cwd: REPO })
  assert.match(help.stdout, /^Usage: plant-store token …\n\n {2}token {12}print a new random API token/)
})
