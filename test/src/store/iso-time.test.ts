import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isoTime, parseDateTime } from '../../../src/store/iso-time.js'

test('isoTime writes exactly what Date#toISOString writes', () => {
  const edges = [
    0, 1, -1, 999, 1000, 86_399_999, 86_400_000, Date.UTC(2000, 1, 29), Date.UTC(2100, 1, 28, 23, 59, 59, 999),
    Date.UTC(2024, 11, 31, 23, 59, 59, 999), Date.UTC(1969, 11, 31), Date.UTC(1900, 2, 1), Date.UTC(1600, 1, 29),
    -62_135_596_800_000, -62_135_596_800_001, 253_402_300_799_999, 253_402_300_800_000, 8.64e15, -8.64e15
  ]
  for (const ms of edges) assert.equal(isoTime(ms), new Date(ms).toISOString(), String(ms))
  // A deterministic spread over the four-digit years and beyond (a linear congruential sequence).
  let seed = 12345
  for (let i = 0; i < 200_000; i++) {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
    const ms = Math.round((seed / 2_147_483_648 - 0.5) * 2 * 3e14)
    assert.equal(isoTime(ms), new Date(ms).toISOString())
  }
})

test('parseDateTime: what Date.parse reads, and a leap second (:60) as the second after :59', () => {
  const cases: Array<[string, number]> = [
    ['2016-12-31T23:59:59Z', Date.UTC(2016, 11, 31, 23, 59, 59)],
    ['2016-12-31t23:59:59.5z', Date.UTC(2016, 11, 31, 23, 59, 59, 500)],
    ['2016-12-31T23:59:60Z', Date.UTC(2017, 0, 1)],
    ['2016-12-31T23:59:60.250Z', Date.UTC(2017, 0, 1, 0, 0, 0, 250)],
    ['2016-12-31 23:59:60z', Date.UTC(2017, 0, 1)],
    ['2017-01-01T00:59:60+01:00', Date.UTC(2017, 0, 1)],
    ['2016-12-31T18:59:60-05:00', Date.UTC(2017, 0, 1)]
  ]
  for (const [text, ms] of cases) assert.equal(parseDateTime(text), ms, text)
  assert.ok(Number.isNaN(parseDateTime('yesterday')))
})
