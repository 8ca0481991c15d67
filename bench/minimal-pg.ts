import Fastify from 'fastify'
import pg from 'pg'

/**
 * The minimal PostgreSQL service of `npm run bench -- --db postgres://…`: Fastify and node-postgres,
 * nothing else (no auth, no schemas, no extra headers), `Pool({ max: 10 })`, one parameterised
 * autocommit statement per request, rows sent as the driver returns them. The floor of what any
 * service on PostgreSQL pays.
 *
 * Started by bench/bench.ts: `MINIMAL_DATABASE_URL` (its application_name names its backends) and
 * `MINIMAL_SCHEMA` (made and seeded by the benchmark: bench/postgres.ts). Prints
 * `minimal is listening on <url>` when ready.
 */

const table = `${process.env.MINIMAL_SCHEMA ?? 'public'}.plants`
const pool = new pg.Pool({ connectionString: process.env.MINIMAL_DATABASE_URL, max: 10 })
const app = Fastify({ logger: false })

app.get<{ Params: { id: string } }>('/plants/:id', async (request, reply) => {
  const { rows: [row] } = await pool.query(`SELECT * FROM ${table} WHERE id = $1`, [request.params.id])
  if (row === undefined) return await reply.code(404).send({ error: 404, message: 'not found' })
  return row
})

app.post<{ Body: { name: string, tag?: string } }>('/plants', async (request, reply) => {
  const now = Date.now()
  const { rows: [row] } = await pool.query(
    `INSERT INTO ${table} (name, tag, created_at, updated_at) VALUES ($1, $2, $3, $3) RETURNING *`,
    [request.body.name, request.body.tag ?? null, now])
  return await reply.code(201).send(row)
})

app.delete<{ Params: { id: string } }>('/plants/:id', async (request, reply) => {
  const { rowCount } = await pool.query(`DELETE FROM ${table} WHERE id = $1`, [request.params.id])
  return await reply.code(rowCount === 0 ? 404 : 204).send()
})

const address = await app.listen({ port: 0, host: '127.0.0.1' })
process.stdout.write(`minimal is listening on ${address}\n`)
process.once('SIGTERM', () => {
  app.close().then(async () => { await pool.end(); process.exit(0) }, () => process.exit(1))
})
