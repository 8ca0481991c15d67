import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Concurrent create/delete load on a running server while its database fails, and what it was
 * answered: every answer must be a 2xx or a 503, and every acknowledged write must hold afterwards.
 */
export interface WriteLoad {
  /** Stops the clients and resolves once each has had its last answer. */
  stop: () => Promise<LoadRecord>
}

export interface LoadRecord {
  /** How many answers of each status. */
  statuses: Map<number, number>
  /** Answers that must not happen: another status, or no answer at all (the server gone). */
  unexpected: string[]
  /** Acknowledged creates (201) still there, by `client/id`: the name they were created with. */
  kept: Map<string, { headers: Record<string, string>, id: number, name: string }>
  /** Acknowledged deletes (204), by `client/id`. */
  deleted: Map<string, { headers: Record<string, string>, id: number }>
  /** Every id a 201 gave, by Authorization header (a sandbox tenant has ids of its own): none twice. */
  issued: Map<string, number[]>
}

export interface WriteLoadOptions {
  clients: number
  /** The Authorization header of each client (a sandbox: a tenant each). */
  headers: (client: number) => Record<string, string>
}

/** Each client creates plants and deletes every other one it was given, one request at a time. */
export function startWriteLoad (baseUrl: string, options: WriteLoadOptions): WriteLoad {
  const record: LoadRecord = {
    statuses: new Map(),
    unexpected: [],
    kept: new Map(),
    deleted: new Map(),
    issued: new Map()
  }
  const stopping = new AbortController()
  const answer = async (method: string, path: string, headers: Record<string, string>,
    body?: unknown): Promise<{ status: number, id?: number }> => {
    try {
      const res = await fetch(`${baseUrl}${path}`, {
        method,
        headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
        ...(body !== undefined && { body: JSON.stringify(body) })
      })
      const text = await res.text()
      record.statuses.set(res.status, (record.statuses.get(res.status) ?? 0) + 1)
      if (res.status === 503) assertErrorShape(text)
      else if (res.status < 200 || res.status > 299) record.unexpected.push(`${method} ${path}: ${res.status} ${text}`)
      return res.status === 201
        ? {
            status: res.status,
            id: (JSON.parse(text) as { id: number }).id
          }
        : { status: res.status }
    } catch (err) {
      record.unexpected.push(`${method} ${path}: ${(err as Error).message}`)
      await sleep(50)
      return { status: 0 }
    }
  }
  const client = async (n: number): Promise<void> => {
    const headers = options.headers(n)
    const tenant = headers.authorization ?? ''
    const issued = record.issued.get(tenant) ?? []
    record.issued.set(tenant, issued)
    for (let i = 0; !stopping.signal.aborted; i++) {
      const name = `load ${n}-${i}`
      const created = await answer('POST', '/plants', headers, { name })
      if (created.id === undefined) continue
      issued.push(created.id)
      if (i % 2 === 0) {
        record.kept.set(`${n}/${created.id}`, { headers, id: created.id, name })
        continue
      }
      const removed = await answer('DELETE', `/plants/${created.id}`, headers)
      if (removed.status === 204) record.deleted.set(`${n}/${created.id}`, { headers, id: created.id })
    }
  }
  const clients = Array.from({ length: options.clients }, async (_, n) => { await client(n) })
  return {
    stop: async () => {
      stopping.abort()
      await Promise.all(clients)
      return record
    }
  }
}

function assertErrorShape (text: string): void {
  const body = JSON.parse(text) as Record<string, unknown>
  assert.deepEqual(Object.keys(body), ['error', 'message'])
  assert.equal(body.error, 503)
}

/** Every plant the holder of `headers` can see, by id: the list read page by page (keyset, 100 at a time). */
async function everyPlant (baseUrl: string, headers: Record<string, string>): Promise<Map<number, string>> {
  const plants = new Map<number, string>()
  for (let after: number | undefined; ;) {
    const res = await fetch(`${baseUrl}/plants?limit=100${after === undefined ? '' : `&after=${after}`}`, { headers })
    assert.equal(res.status, 200)
    const page = await res.json() as Array<{ id: number, name: string }>
    for (const { id, name } of page) plants.set(id, name)
    if (page.length < 100) return plants
    after = page[page.length - 1]?.id
  }
}

/**
 * Asserts the load's whole record: only 2xx and 503 answers, at least `minWrites` acknowledged
 * creates, no id issued twice to one client, every kept plant there as created and every deleted one gone.
 * Each tenant's plants are read as a list, a few requests rather than one for each write.
 */
export async function assertAcknowledgedWrites (baseUrl: string, record: LoadRecord, minWrites = 1): Promise<void> {
  assert.deepEqual(record.unexpected, [])
  assert.ok((record.statuses.get(201) ?? 0) >= minWrites, `acknowledged creates: ${record.statuses.get(201) ?? 0}`)
  for (const ids of record.issued.values()) assert.equal(new Set(ids).size, ids.length, 'an id was issued twice')
  const tenants = new Map<string, Promise<Map<number, string>>>()
  const plantsOf = async (headers: Record<string, string>): Promise<Map<number, string>> => {
    const tenant = headers.authorization ?? ''
    const plants = tenants.get(tenant) ?? everyPlant(baseUrl, headers)
    tenants.set(tenant, plants)
    return await plants
  }
  for (const { headers, id, name } of record.kept.values()) {
    assert.equal((await plantsOf(headers)).get(id), name, `kept plant ${id}`)
  }
  for (const { headers, id } of record.deleted.values()) {
    assert.equal((await plantsOf(headers)).has(id), false, `deleted plant ${id}`)
  }
}

/** Creates a plant until one is acknowledged (503s in between) and resolves with how long that took. */
export async function untilWritesSucceed (baseUrl: string, headers: Record<string, string>,
  timeoutMs: number): Promise<number> {
  const started = Date.now()
  for (;;) {
    const res = await fetch(`${baseUrl}/plants`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'after the outage' })
    })
    const text = await res.text()
    if (res.status === 201) return Date.now() - started
    assert.equal(res.status, 503, text)
    assertErrorShape(text)
    if (Date.now() - started > timeoutMs) assert.fail(`no write succeeded within ${timeoutMs} ms`)
    await sleep(100)
  }
}
