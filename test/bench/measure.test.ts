import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { roundOrder, startListening } from '../../bench/measure.js'

function logFile (t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-measure-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return join(dir, 'out.log')
}

test('startListening resolves with the URL the process prints, once it prints it', async (t) => {
  const script = 'setTimeout(() => { console.log("minimal is listening on http://127.0.0.1:4321 now") }, 100); ' +
    'setTimeout(() => {}, 60_000)'
  const { child, url } = await startListening(process.execPath, ['-e', script], {}, logFile(t), 10_000)
  t.after(() => { child.kill('SIGKILL') })
  assert.equal(url, 'http://127.0.0.1:4321')
  assert.equal(child.exitCode, null)
})

test('startListening reads the URL out of a JSON log line too (plant-store off a terminal)', async (t) => {
  const line = JSON.stringify({
    level: 30,
    msg: 'plant-store is listening on http://127.0.0.1:4321',
    url: 'http://127.0.0.1:4321'
  })
  const script = `console.log(${JSON.stringify(line)}); setTimeout(() => {}, 60_000)`
  const { child, url } = await startListening(process.execPath, ['-e', script], {}, logFile(t), 10_000)
  t.after(() => { child.kill('SIGKILL') })
  assert.equal(url, 'http://127.0.0.1:4321')
})

test('startListening fails with the end of the output when the process exits before listening', async (t) => {
  const script = 'console.log("cannot open the database"); process.exit(3)'
  await assert.rejects(startListening(process.execPath, ['-e', script], {}, logFile(t), 10_000),
    (err: Error) => err.message === `${script} did not start; its output:\ncannot open the database\n`)
})

test('startListening gives up on a process that stays silent past the timeout', async (t) => {
  const script = 'setTimeout(() => {}, 60_000)'
  await assert.rejects(startListening(process.execPath, ['-e', script], {}, logFile(t), 300),
    (err: Error) => err.message === `${script} did not start; its output:\n`)
})

test('roundOrder starts each round one run later: over as many rounds, each run takes every place once', () => {
  const runs = ['peer', 'minimal', 'baseline', 'plant-store']
  const rounds = [1, 2, 3, 4].map((round) => roundOrder(runs, round))
  assert.deepEqual(rounds, [
    ['peer', 'minimal', 'baseline', 'plant-store'],
    ['minimal', 'baseline', 'plant-store', 'peer'],
    ['baseline', 'plant-store', 'peer', 'minimal'],
    ['plant-store', 'peer', 'minimal', 'baseline']
  ])
  assert.deepEqual(roundOrder(runs, 5), rounds[0])
  assert.deepEqual(runs, ['peer', 'minimal', 'baseline', 'plant-store'])
})
