import Database from 'better-sqlite3'
import Fastify from 'fastify'
import { migrations } from '../src/store/sqlite/migrations.js'

/**
 * The second reference of `npm run bench`: the service a user would write instead of plant-store,
 * with Fastify and better-sqlite3 and nothing else. The same plants table (migration 1 of
 * src/store/sqlite/migrations.ts) and the same four routes the benchmark drives, written the
 * obvious way: no auth, no validation, no response schema, no extra headers, no logger, one
 * autocommit statement per request, rows sent as SQLite returns them (ids as JavaScript numbers,
 * times as epoch milliseconds).
 *
 * Durability as a user would set it: `MINIMAL_SYNCHRONOUS=normal` is WAL with synchronous=NORMAL
 * (survives a process crash), `full` is WAL with synchronous=FULL (one fsync per commit, on the
 * event loop: survives a power loss, as plant-store's `full` does).
 *
 * Started by bench/bench.ts as its own process: `MINIMAL_DATABASE` (file), `MINIMAL_SYNCHRONOUS`,
 * `MINIMAL_SEED` (plants created before it listens, ids 1..N: the benchmark's own set-up, not part
 * of what is measured). Prints `minimal is listening on <url>` when ready.
 */

const file = process.env.MINIMAL_DATABASE ?? ':memory:'
const synchronous = process.env.MINIMAL_SYNCHRONOUS === 'full' ? 'FULL' : 'NORMAL'
const seed = Number(process.env.MINIMAL_SEED ?? '0')

const db = new Database(file)
db.pragma('journal_mode = WAL')
db.pragma(`synchronous = ${synchronous}`)
// The very table plant-store's first migration creates (the file is new for every run).
db.exec(migrations[0]?.up as string)

interface PlantRow { id: number, name: string, tag: string | null, created_at: number, updated_at: number }

const get = db.prepare<[number], PlantRow>('SELECT * FROM plants WHERE id = ?')
const list = db.prepare<[number, number], PlantRow>('SELECT * FROM plants WHERE id > ? ORDER BY id LIMIT ?')
const insert = db.prepare<[string, string | null, number, number], PlantRow>(
  'INSERT INTO plants (name, tag, created_at, updated_at) VALUES (?, ?, ?, ?) RETURNING *')
const remove = db.prepare<[number]>('DELETE FROM plants WHERE id = ?')

if (seed > 0) {
  // Set-up, in one transaction: the same names and tags as the benchmark seeds plant-store with.
  db.transaction(() => {
    const now = Date.now()
    for (let i = 0; i < seed; i++) insert.get(`Plant ${i}`, i % 2 === 0 ? 'indoor' : 'outdoor', now, now)
  })()
}

const app = Fastify({ logger: false })

app.get<{ Params: { id: string } }>('/plants/:id', async (request, reply) => {
  const plant = get.get(Number(request.params.id))
  if (plant === undefined) return await reply.code(404).send({ error: 404, message: 'not found' })
  return plant
})

app.get<{ Querystring: { limit?: string, after?: string } }>('/plants', async (request) => {
  const { limit = '20', after = '0' } = request.query
  return list.all(Number(after), Math.min(Number(limit), 100))
})

app.post<{ Body: { name: string, tag?: string } }>('/plants', async (request, reply) => {
  const { name, tag } = request.body
  const now = Date.now()
  return await reply.code(201).send(insert.get(name, tag ?? null, now, now))
})

app.delete<{ Params: { id: string } }>('/plants/:id', async (request, reply) => {
  const { changes } = remove.run(Number(request.params.id))
  return await reply.code(changes === 0 ? 404 : 204).send()
})

const address = await app.listen({ port: 0, host: '127.0.0.1' })
process.stdout.write(`minimal is listening on ${address}\n`)
process.once('SIGTERM', () => {
  app.close().then(() => { db.close(); process.exit(0) }, () => process.exit(1))
})
