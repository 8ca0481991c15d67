import assert from 'node:assert/strict'
import { test } from 'node:test'
import { instrumentStore, type OperationObserver } from '../../../src/store/instrumented.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { RESOURCES } from '../../../src/resources/index.js'

test('no observer: the bare store itself; observers: each told when every operation ' +
  'starts and how it ended', async () => {
  const store = createSqliteStore({ filename: ':memory:' })
  assert.equal(instrumentStore(store, [], RESOURCES), store)
  const events: string[] = []
  const observer = (name: string): OperationObserver => (operation) => {
    events.push(`${name} ${operation} start`)
    return (error) => { events.push(`${name} ${operation} ${error === undefined ? 'ok' : (error as Error).message}`) }
  }
  const observed = instrumentStore(store, [observer('metrics'), observer('tracing')], RESOURCES)
  const { item: plant } = await observed.plants.create({ name: 'Fern' })
  await observed.plants.update(plant.id, { tag: 'green' })
  await observed.plants.replace(plant.id, { name: 'Fern' })
  await observed.plants.list({ limit: 1 })
  await observed.plants.get(plant.id)
  await observed.ping()
  await observed.plants.delete(plant.id)
  await observed.webhooks.listSubscriptions('owner', { limit: 1 })
  // The dispatcher's own calls are not operations anyone asked for: not observed.
  await observed.webhooks.claimDue({
    lease: 'l',
    now: Date.now(),
    leaseMs: 1000,
    limit: 1,
    perSubscription: 1,
    skipSubscriptions: []
  })
  await assert.rejects(observed.plants.delete(plant.id), { message: `Plant ${plant.id} not found` })
  await observed.close()
  const operations = ['plants.create', 'plants.update', 'plants.replace', 'plants.list', 'plants.get', 'ping',
    'plants.delete', 'webhooks.listSubscriptions']
  assert.deepEqual(events, [
    ...operations.flatMap(
      (operation) => [`metrics ${operation} start`, `tracing ${operation} start`, `metrics ${operation} ok`,
        `tracing ${operation} ok`]),
    'metrics plants.delete start', 'tracing plants.delete start', `metrics plants.delete Plant ${plant.id} not found`,
      `tracing plants.delete Plant ${plant.id} not found`
  ])
})
