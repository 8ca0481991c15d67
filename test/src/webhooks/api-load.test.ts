import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ApiLoadMonitor } from '../../../src/webhooks/api-load.js'
import { until } from '../../helpers/webhook-receiver.js'

test('the API is busy only when the loop was saturated and requests were served in the same interval', () => {
  let utilization = 0
  const load = new ApiLoadMonitor({ threshold: 0.9, releaseBelow: 0.9, utilization: () => utilization })
  assert.equal(load.busy, false)

  utilization = 0.95
  load.sample()
  assert.equal(load.busy, false, 'a saturated loop without requests is the dispatcher itself catching up')

  load.countRequest()
  load.sample()
  assert.equal(load.busy, true)

  // Each sample counts only the requests since the previous one.
  load.sample()
  assert.equal(load.busy, false)

  utilization = 0.5
  for (let i = 0; i < 100; i++) load.countRequest()
  load.sample()
  assert.equal(load.busy, false, 'requests on a loop with room to spare')

  utilization = 0.9
  load.countRequest()
  load.sample()
  assert.equal(load.busy, true)
  load.stop()
  assert.equal(load.busy, false, 'a stopped monitor never holds deliveries back')
})

test('once busy, the API stays busy until utilization drops below releaseBelow (with requests served)', () => {
  let utilization = 0.95
  const load = new ApiLoadMonitor({ threshold: 0.9, releaseBelow: 0.7, utilization: () => utilization })
  const sample = (value: number, requests = 1): boolean => {
    utilization = value
    for (let i = 0; i < requests; i++) load.countRequest()
    load.sample()
    return load.busy
  }
  assert.equal(sample(0.8), false, 'not busy yet: below the threshold')
  assert.equal(sample(0.95), true)
  assert.equal(sample(0.8), true, 'busy stays busy above releaseBelow')
  assert.equal(sample(0.7), true)
  assert.equal(sample(0.69), false)
  assert.equal(sample(0.8), false, 'and is busy again only from the threshold')
  assert.equal(sample(0.9), true)
  assert.equal(sample(0.95, 0), false, 'an interval without requests ends it at once')

  // A release point above the threshold is the threshold: busy from 0.5 stays busy at 0.6.
  const clamped = new ApiLoadMonitor({ threshold: 0.5, releaseBelow: 0.7, utilization: () => 0.6 })
  clamped.countRequest()
  clamped.sample()
  clamped.countRequest()
  clamped.sample()
  assert.equal(clamped.busy, true)
})

test('started, it samples the real event loop on its own; a request-free interval is never busy', async () => {
  const load = new ApiLoadMonitor({ intervalMs: 10, threshold: 0 })
  load.start()
  load.start()
  try {
    // Threshold 0: any utilization counts, so the requests alone decide.
    await until('busy', () => { load.countRequest(); return load.busy })
    await until('no longer busy', () => !load.busy)
  } finally {
    load.stop()
  }
})
