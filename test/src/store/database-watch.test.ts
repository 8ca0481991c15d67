import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DatabaseWatch } from '../../../src/store/database-watch.js'
import { until } from '../../helpers/webhook-receiver.js'

interface Told { level: 'error' | 'warn', message: string, details: Record<string, unknown> }

/** A watch over a database this test turns on and off, and what it logged. */
function watched (options: { summaryMs?: number, recheckMs?: number } = {}) {
  const told: Told[] = []
  const state = { up: true, probes: 0 }
  const watch = new DatabaseWatch({
    probe: async () => {
      state.probes++
      await new Promise((resolve) => setImmediate(resolve))
      if (!state.up) {
        throw new Error('the database is unavailable', { cause: new Error('connect ECONNREFUSED 127.0.0.1:5432') })
      }
    },
    log: {
      error: (details,
        message) => { told.push({ level: 'error', message, details: details as Record<string, unknown> }) },
      warn: (details, message) => { told.push({ level: 'warn', message, details: details as Record<string, unknown> }) }
    },
    summaryMs: options.summaryMs ?? 60_000,
    recheckMs: options.recheckMs ?? 10
  })
  return { watch, told, state, messages: () => told.map(({ level, message }) => `${level}: ${message}`) }
}

test('probes at the same moment share one; a failed probe rejects as the probe did', async (t) => {
  const { watch, state } = watched()
  t.after(() => { watch.close() })
  await Promise.all([watch.probe(), watch.probe(), watch.probe()])
  assert.equal(state.probes, 1)
  state.up = false
  await assert.rejects(watch.probe(), /the database is unavailable/)
  assert.equal(watch.up, false)
})

test('down, then back by itself: one line each, the cause and how long it was away', async (t) => {
  const { watch, told, state, messages } = watched()
  t.after(() => { watch.close() })
  state.up = false
  await assert.rejects(watch.probe())
  await assert.rejects(watch.probe())
  // The watch probes again by itself (recheckMs) until the database answers.
  state.up = true
  await until('the database is back', () => watch.up)
  assert.deepEqual(messages(), ['error: the database is unreachable', 'warn: the database is back'])
  assert.equal(told[0]?.details.cause, 'connect ECONNREFUSED 127.0.0.1:5432')
  assert.ok(Number(told[1]?.details.downMs) >= 0)
})

test('failures: the first of a period is told on its own, the rest counted into one line per period', async (t) => {
  const { watch, told, state, messages } = watched({ summaryMs: 50 })
  t.after(() => { watch.close() })
  state.up = false
  assert.equal(watch.failed('request'), true)
  await until('the probe the failure asked for found it down', () => !watch.up)
  assert.deepEqual([watch.failed('request'), watch.failed('request'), watch.failed('dispatcher')],
    [false, false, false])
  await until('the period is over', () => told.length === 2)
  assert.deepEqual(messages(),
    ['error: the database is unreachable', 'error: failures while the database was unavailable'])
  assert.equal(told[1]?.details.failedRequests, 2)
  assert.equal(told[1]?.details.dispatcherErrors, 1)
  // While it is down, even the first failure of a period is only counted; the period ends when it is back.
  assert.equal(watch.failed('request'), false)
  state.up = true
  await until('the database is back', () => watch.up)
  assert.deepEqual(messages().slice(2),
    ['error: failures while the database was unavailable', 'warn: the database is back'])
  assert.equal(told[2]?.details.failedRequests, 1)
})

test('while it is thought up, a dispatcher failure is told and a lone request failure keeps its ' +
  'line; nothing is counted', async (t) => {
  const { watch, told, state } = watched({ summaryMs: 20 })
  t.after(() => { watch.close() })
  assert.equal(watch.failed('dispatcher'), true)
  assert.equal(watch.failed('request'), true)
  await until('the probes asked for are done', () => state.probes >= 1 && watch.up)
  await new Promise((resolve) => setTimeout(resolve, 40))
  assert.deepEqual(told, [])
})

test('found down by a probe first (a scrape, the dispatcher): the first request failure still has its own ' +
  'line, the rest are counted', async (t) => {
  const { watch, told, state, messages } = watched({ summaryMs: 50 })
  t.after(() => { watch.close() })
  state.up = false
  assert.equal(watch.failed('dispatcher'), true)
  await until('the probe the dispatcher asked for found it down', () => !watch.up)
  assert.deepEqual([watch.failed('request'), watch.failed('request'), watch.failed('request')], [true, false, false])
  await until('the period is over', () => told.length === 2)
  assert.deepEqual(messages(),
    ['error: the database is unreachable', 'error: failures while the database was unavailable'])
  assert.equal(told[1]?.details.failedRequests, 2)
})

test('while the probe a failure started is under way, more dispatcher failures are counted, not told one by ' +
  'one', async (t) => {
  const { watch, told, messages } = watched({ summaryMs: 20 })
  t.after(() => { watch.close() })
  assert.deepEqual([watch.failed('dispatcher'), watch.failed('dispatcher'), watch.failed('dispatcher')],
    [true, false, false])
  await until('the period is over', () => told.length === 1)
  assert.deepEqual(messages(), ['error: failures while the database was unavailable'])
  assert.equal(told[0]?.details.dispatcherErrors, 2)
})

test('closed: what was counted is told, nothing is counted any more', async () => {
  const { watch, told, state, messages } = watched()
  state.up = false
  await assert.rejects(watch.probe())
  assert.equal(watch.failed('request'), true)
  assert.equal(watch.failed('request'), false)
  watch.close()
  assert.deepEqual(messages(),
    ['error: the database is unreachable', 'error: failures while the database was unavailable'])
  assert.equal(told[1]?.details.failedRequests, 1)
  assert.equal(watch.failed('request'), true)
})
