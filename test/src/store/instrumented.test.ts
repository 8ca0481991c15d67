import assert from 'node:assert/strict'
import { test } from 'node:test'
import { instrumentStore, type OperationObserver } from '../../../src/store/instrumented.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'

test('no observer: the bare store itself; observers: each told when every operation starts and how it ended', async () => {
  const store = createSqliteStore({ filename: ':memory:' })
  assert.equal(instrumentStore(store, []), store)
  const events: string[] = []
  const observer = (name: string): OperationObserver => (operation) => {
    events.push(`${name} ${operation} start`)
    return (error) => { events.push(`${name} ${operation} ${error === undefined ? 'ok' : (error as Error).message}`) }
  }
  const observed = instrumentStore(store, [observer('metrics'), observer('tracing')])
  const { plant } = await observed.create({ name: 'Fern' })
  await observed.update(plant.id, { tag: 'green' })
  await observed.replace(plant.id, { name: 'Fern' })
  await observed.list({ limit: 1 })
  await observed.get(plant.id)
  await observed.ping()
  await observed.delete(plant.id)
  await assert.rejects(observed.delete(plant.id), { message: `Plant ${plant.id} not found` })
  await observed.close()
  const operations = ['create', 'update', 'replace', 'list', 'get', 'ping', 'delete']
  assert.deepEqual(events, [
    ...operations.flatMap((operation) => [`metrics ${operation} start`, `tracing ${operation} start`, `metrics ${operation} ok`, `tracing ${operation} ok`]),
    'metrics delete start', 'tracing delete start', `metrics delete Plant ${plant.id} not found`, `tracing delete Plant ${plant.id} not found`
  ])
})
