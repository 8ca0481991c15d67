import assert from 'node:assert/strict'
import { test } from 'node:test'
import { PLANTS, plantJson } from '../../../src/resources/plants.js'
import {
  buildEventMessage, eventPayload, eventPayloadAroundId, newMessageId,
  resourceEvent
} from '../../../src/webhooks/events.js'
import { PLANT_CREATED, PLANT_UPDATED } from '../../helpers/resources.js'

const PLANT = {
  id: 9223372036854775807n,
  name: 'Mon"stera\n',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-02T00:00:00.000Z'
}

test('a plant is JSON with its int64 id exact (no rounding beyond 2^53), strings escaped, no tag when absent', () => {
  const json = plantJson(PLANT)
  assert.equal(json,
    '{"id":9223372036854775807,"name":"Mon\\"stera\\n",' +
    '"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-02T00:00:00.000Z"}')
  assert.equal(plantJson({ ...PLANT, id: 7n, tag: 'x' }).includes('"tag":"x"'), true)
})

test('the body is { type, timestamp (RFC 3339), data }', () => {
  const body = JSON.parse(
    eventPayload(PLANT_UPDATED, plantJson({ ...PLANT, id: 7n, tag: 'green' }),
      Date.UTC(2026, 0, 2, 3, 4, 5, 678))) as unknown
  assert.deepEqual(body, {
    type: PLANT_UPDATED,
    timestamp: '2026-01-02T03:04:05.678Z',
    data: {
      id: 7,
      name: 'Mon"stera\n',
      tag: 'green',
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-02T00:00:00.000Z'
    }
  })
})

test('the body around the id, joined with an id, is the body of the plant with that id (with and without a ' +
  'tag)', () => {
  const at = Date.UTC(2026, 0, 2, 3, 4, 5, 678)
  for (const plant of [PLANT, { ...PLANT, tag: 'gr"een' }]) {
    const { id: _id, ...withoutId } = plant
    // What PostgreSQL's one-statement create does: the JSON after its id, with the id left to the statement.
    const afterId = plantJson({ ...plant, id: 0n }).slice('{"id":0'.length)
    const { before, after } = eventPayloadAroundId(PLANT_CREATED, afterId, at)
    for (const id of [1n, 9007199254740993n]) {
      const body = before + id.toString() + after
      assert.deepEqual(JSON.parse(body.replace(/"id":(\d+)/, '"id":"$1"')), {
        type: PLANT_CREATED, timestamp: '2026-01-02T03:04:05.678Z', data: { ...withoutId, id: id.toString() }
      })
    }
  }
})

test('a message takes its timestamp from when the change happened, else from now; each has its own id', () => {
  const at = Date.UTC(2026, 0, 1)
  const first = buildEventMessage(resourceEvent(PLANTS, 'deleted', { ...PLANT, id: 1n }, at), at + 5000)
  assert.match(first.payload, /"timestamp":"2026-01-01T00:00:00.000Z"/)
  const second = buildEventMessage(resourceEvent(PLANTS, 'deleted', { ...PLANT, id: 1n }), at + 5000)
  assert.match(second.payload, /"timestamp":"2026-01-01T00:00:05.000Z"/)
  assert.notEqual(first.messageId, second.messageId)
  assert.match(newMessageId(), /^msg_[A-Za-z0-9_-]{22}$/)
})

test('message ids stay unique and well-formed across many refills of their random pool', () => {
  const ids = Array.from({ length: 5000 }, newMessageId)
  assert.equal(new Set(ids).size, ids.length)
  for (const id of ids) assert.match(id, /^msg_[A-Za-z0-9_-]{22}$/)
})
