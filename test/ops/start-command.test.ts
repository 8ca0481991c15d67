import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { SERVER_ENV, SERVER_NODE_FLAGS } from '../../bench/measure.js'
import { startServer } from '../helpers/server-process.js'

/** `npm start`'s last command, `VAR=value … node <flags> dist/src/server.js`, taken apart. */
function startCommand (): { env: Record<string, string>, nodeArgs: string[], script: string } {
  const { scripts } = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }
  const words = (scripts.start ?? '').split('&&').at(-1)?.trim().split(/\s+/) ?? []
  const env: Record<string, string> = {}
  while (words[0]?.includes('=') === true) {
    const [name, value] = (words.shift() as string).split('=') as [string, string]
    env[name] = value
  }
  assert.equal(words.shift(), 'node', 'npm start runs node')
  const script = words.pop() ?? ''
  return { env, nodeArgs: words, script }
}

test('the benchmark runs the service as npm start does: the same node flags and environment', () => {
  const { env, nodeArgs, script } = startCommand()
  assert.equal(script, 'dist/src/server.js')
  assert.deepEqual(nodeArgs, SERVER_NODE_FLAGS)
  assert.deepEqual(env, SERVER_ENV)
})

test('this Node.js accepts npm start\'s flags: the service starts and answers with them', async (t) => {
  const { env, nodeArgs } = startCommand()
  const server = await startServer(t, { nodeArgs, env })
  const response = await fetch(`${server.baseUrl}/health`)
  assert.equal(response.status, 200)
})
