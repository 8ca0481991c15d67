import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import bearerAuth from '@fastify/bearer-auth'
import cors from '@fastify/cors'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify from 'fastify'
import helmet from 'helmet'
import pg from 'pg'

/**
 * The idiomatic PostgreSQL peer of `npm run bench -- --db postgres://…`: the service a user would
 * write instead of plant-store with the usual pieces: Fastify 5, @fastify/bearer-auth, TypeBox
 * params, body and response schemas, helmet's headers (as @fastify/helmet sets them: the helmet
 * middleware on every request), CORS, a strong ETag of every GET's body, node-postgres
 * `Pool({ max: 10 })` and one parameterised statement per request: no transaction, no events.
 * What it skips (the outbox, idempotency keys, If-Match, statement bounds) is what plant-store keeps.
 *
 * Started by bench/bench.ts: `PEER_DATABASE_URL` (its application_name names its backends),
 * `PEER_SCHEMA` (made and seeded by the benchmark: the plants table of minimal-pg.ts), `PEER_TOKEN`.
 * Prints `peer is listening on <url>` when ready.
 */

const schema = process.env.PEER_SCHEMA ?? 'public'
const pool = new pg.Pool({ connectionString: process.env.PEER_DATABASE_URL, max: 10 })
const table = `${schema}.plants`

const Plant = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  tag: Type.Optional(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' })
})
const Params = Type.Object({ id: Type.Integer({ minimum: 1 }) })
const NewPlant = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 100 }))
}, { additionalProperties: false })
const Problem = Type.Object({ error: Type.Integer(), message: Type.String() })

interface PlantRow { id: string, name: string, tag: string | null, created_at: string, updated_at: string }

const plant = (row: PlantRow): { id: number, name: string, tag?: string, createdAt: string, updatedAt: string } => ({
  id: Number(row.id),
  name: row.name,
  ...(row.tag !== null && { tag: row.tag }),
  createdAt: new Date(Number(row.created_at)).toISOString(),
  updatedAt: new Date(Number(row.updated_at)).toISOString()
})

const app = Fastify({ logger: false }).withTypeProvider<TypeBoxTypeProvider>()
const headers = helmet()
app.addHook('onRequest', (request, reply, done) => {
  headers(request.raw as IncomingMessage, reply.raw as ServerResponse,
    (err?: unknown) => { done(err as Error | undefined) })
})
await app.register(cors)
await app.register(bearerAuth, { keys: new Set([process.env.PEER_TOKEN ?? '']) })
app.addHook('onSend', async (request, reply, payload) => {
  if (request.method !== 'GET' || typeof payload !== 'string') return payload
  const etag = `"${createHash('sha1').update(payload).digest('base64url')}"`
  void reply.header('etag', etag)
  if (request.headers['if-none-match'] === etag) void reply.code(304)
  return payload
})

app.get('/plants/:id', { schema: { params: Params, response: { 200: Plant, 404: Problem } } }, async (request,
  reply) => {
  const { rows: [row] } = await pool.query<PlantRow>(`SELECT * FROM ${table} WHERE id = $1`, [request.params.id])
  if (row === undefined) return await reply.code(404).send({ error: 404, message: 'not found' })
  return plant(row)
})

app.post('/plants', { schema: { body: NewPlant, response: { 201: Plant } } }, async (request, reply) => {
  const now = Date.now()
  const { rows: [row] } = await pool.query<PlantRow>(
    `INSERT INTO ${table} (name, tag, created_at, updated_at) VALUES ($1, $2, $3, $3) RETURNING *`,
    [request.body.name, request.body.tag ?? null, now])
  return await reply.code(201).send(plant(row as PlantRow))
})

app.delete('/plants/:id', { schema: { params: Params, response: { 204: Type.Null(), 404: Problem } } }, async (request,
  reply) => {
  const { rowCount } = await pool.query(`DELETE FROM ${table} WHERE id = $1`, [request.params.id])
  if (rowCount === 0) return await reply.code(404).send({ error: 404, message: 'not found' })
  return await reply.code(204).send(null)
})

const address = await app.listen({ port: 0, host: '127.0.0.1' })
process.stdout.write(`peer is listening on ${address}\n`)
process.once('SIGTERM', () => {
  app.close().then(async () => { await pool.end(); process.exit(0) }, () => process.exit(1))
})
