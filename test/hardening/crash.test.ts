import assert from 'node:assert/strict'
import { Agent, request } from 'node:http'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { AUTH } from '../helpers/app.js'
import { tempDatabaseFile } from '../helpers/cleanup.js'
import { startServer } from '../helpers/server-process.js'

interface Answer { status: number, body: string }

/** One HTTP request; rejects when the connection dies before a whole answer arrives. */
function send (agent: Agent, port: number, method: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const req = request({
      agent,
      host: '127.0.0.1',
      port,
      method,
      path,
      headers: { ...AUTH, ...(payload !== undefined && { 'content-type': 'application/json' }) }
    }, (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => { text += chunk.toString() })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(payload)
  })
}

test('SIGKILL mid-load, several times: every acknowledged create is there, every acknowledged ' +
  'delete gone, no corruption', { timeout: 60_000 }, async (t) => {
  const file = tempDatabaseFile(t, 'plant-store-crash-')
  const created = new Map<number, string>() // acknowledged creates: id → name
  const deleted = new Set<number>() // acknowledged deletes
  const maybeDeleted = new Set<number>() // deletes sent without an answer: either way is fine
  let sequence = 0

  // Full sync, then normal (which also survives a process crash), then full again.
  for (const [round, synchronous] of (['full', 'normal', 'full'] as const).entries()) {
    const server = await startServer(t, { env: { DATABASE_URL: file, SQLITE_SYNCHRONOUS: synchronous } })
    const agent = new Agent({ keepAlive: true, maxSockets: 16 })
    let acknowledged = 0
    let killed = false
    const killAfter = 60 + round * 40
    const worker = async (): Promise<void> => {
      while (!killed) {
        const live = [...created.keys()].filter((id) => !deleted.has(id) && !maybeDeleted.has(id))
        const target = live[Math.floor(Math.random() * live.length)]
        const deleting = target !== undefined && Math.random() < 0.4
        const name = `plant-${sequence++}`
        if (deleting) maybeDeleted.add(target)
        let answer: Answer
        try {
          answer = deleting
            ? await send(agent, server.port, 'DELETE', `/plants/${target}`)
            : await send(agent,
              server.port, 'POST', '/plants', { name })
        } catch {
          return // the server is gone: this request's fate is unknown
        }
        if (deleting) {
          assert.equal(answer.status, 204, answer.body)
          maybeDeleted.delete(target)
          deleted.add(target)
        } else {
          assert.equal(answer.status, 201, answer.body)
          created.set((JSON.parse(answer.body) as { id: number }).id, name)
        }
        if (++acknowledged === killAfter) {
          killed = true
          server.child.kill('SIGKILL')
        }
      }
    }
    await Promise.all(Array.from({ length: 12 }, worker))
    assert.equal(await server.exited, null, 'killed by the signal')
    agent.destroy()
  }

  const server = await startServer(t, { env: { DATABASE_URL: file } })
  server.child.kill('SIGTERM')
  assert.equal(await server.exited, 0)

  const db = new Database(file, { readonly: true })
  assert.equal(db.pragma('integrity_check', { simple: true }), 'ok')
  const rows = new Map(
    (db.prepare('SELECT id, name FROM plants').all() as Array<{ id: number, name: string }>).map(
      (row) => [row.id, row.name]))
  db.close()
  assert.ok(created.size >= 100, `only ${created.size} creates were acknowledged`)
  assert.ok(deleted.size >= 10, `only ${deleted.size} deletes were acknowledged`)
  for (const [id, name] of created) {
    if (deleted.has(id)) assert.equal(rows.has(id), false, `acknowledged delete of ${id} was lost`)
    else if (!maybeDeleted.has(id)) assert.equal(rows.get(id), name, `acknowledged create of ${id} was lost`)
  }
})
