import Fastify from 'fastify'

/**
 * The ceiling: the fastest a bare Fastify route answers. No logger, no schema, no
 * plugins; the benchmark runs it as its own process, like plant-store, and divides by its figure.
 */
const app = Fastify({ logger: false })
app.get('/', async () => ({ hello: 'world' }))

const address = await app.listen({ port: 0, host: '127.0.0.1' })
process.stdout.write(`ceiling is listening on ${address}\n`)
process.once('SIGTERM', () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
