import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { AUTH, TOKEN } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'

const EXAMPLE = fileURLToPath(new URL('../../examples/plants-client.js', import.meta.url))
const run = promisify(execFile)

test('examples/plants-client.ts (openapi-fetch + the generated types) creates, lists, updates and deletes ' +
  'plants on a real server', async (t) => {
  const server = await startServer(t)
  const { stdout, stderr } = await run(process.execPath, [EXAMPLE], {
    env: { PATH: process.env.PATH, PLANT_STORE_URL: server.baseUrl, PLANT_STORE_TOKEN: TOKEN }
  })
  assert.equal(stderr, '')
  assert.deepEqual(stdout.trimEnd().split('\n'), [
    'created #1 Boston fern [fern] and #2 Golden barrel cactus [succulent]',
    'ferns: #1 Boston fern [fern]',
    'updated #1 Sword fern',
    'deleted #1',
    'deleted #2',
    'after the delete, GET #1: 404 Plant 1 not found'
  ])

  // The server saw all of it: nothing is left.
  const res = await fetch(`${server.baseUrl}/plants`, { headers: AUTH })
  assert.equal(res.status, 200)
  assert.deepEqual(await res.json(), [])
})

test('the example refuses to run without a token, saying why', async () => {
  await assert.rejects(
    run(process.execPath, [EXAMPLE], { env: { PATH: process.env.PATH } }),
    (err: { code?: number, stderr?: string }) => {
      assert.equal(err.code, 2)
      assert.match(err.stderr ?? '', /Set PLANT_STORE_TOKEN/)
      return true
    }
  )
})
