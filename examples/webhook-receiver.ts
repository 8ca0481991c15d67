/**
 * A plant-store webhook receiver in plain node:http. It verifies every request's signature with
 * the `standardwebhooks` package (401 when it does not verify), handles each event once even when
 * it is delivered again (the `webhook-id` stays the same on every attempt), and prints each event
 * of every type the service sends (typed from the `webhooks` of its OpenAPI document).
 *
 *   npm run build
 *   WEBHOOK_SECRET=whsec_... PORT=4000 node dist/examples/webhook-receiver.js
 *
 * Then subscribe it (its secret is in the answer; the service delivers to private addresses such as
 * 127.0.0.1 only with WEBHOOK_ALLOW_PRIVATE_URLS=1):
 *
 *   curl -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' \
 *        -d '{"url":"http://127.0.0.1:4000/"}' http://127.0.0.1:3000/webhooks
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import type { webhooks } from '../client/plant-store-api.js'

export interface ReceiverOptions {
  /** The subscription's `whsec_...` secret. */
  secret: string
  /** 0 (the default) picks a free port. */
  port?: number
  host?: string
  /** How many webhook-ids are remembered to recognise a delivery seen before. */
  remember?: number
  /** Where each line goes (console.log by default). */
  log?: (line: string) => void
}

export interface RunningReceiver {
  /** E.g. `http://127.0.0.1:4000/`: the URL to subscribe. */
  url: string
  port: number
  close: () => Promise<void>
}

/** Every event the service sends, `{ type, timestamp, data }`, as its OpenAPI document's `webhooks` describe them. */
type PlantStoreEvent = {
  [Type in keyof webhooks]: webhooks[Type]['post']['requestBody']['content']['application/json']
}[keyof webhooks]

/** One line per event; a type this receiver does not know yet (a newer service) is acknowledged all the same. */
function describe (event: PlantStoreEvent): string {
  switch (event.type) {
    case 'plant.created':
    case 'plant.updated':
    case 'plant.deleted': {
      const plant = event.data
      return `${event.type} #${plant.id} ${plant.name}${plant.tag === undefined ? '' : ` [${plant.tag}]`}`
    }
    case 'webhook.test':
      return `webhook.test for subscription #${event.data.subscriptionId}`
    default: {
      // A compile error here names an event type the document lists and this switch does not handle.
      const unknown: never = event
      return `${String((unknown as { type?: unknown }).type)}: an event type this receiver does not know`
    }
  }
}

/** Standard Webhooks secrets, as the service makes and accepts them: `whsec_` and 24 to 64 bytes in base64. */
const MIN_SECRET_BYTES = 24
const MAX_SECRET_BYTES = 64

/** A secret no subscription can have would make every request a 401: refused at the start instead. */
export function checkSecret (secret: string): void {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : ''
  const bytes = Buffer.from(encoded, 'base64')
  // Node skips what is not base64: only a canonical encoding reads back the same.
  if (bytes.toString('base64') !== encoded || bytes.length < MIN_SECRET_BYTES || bytes.length > MAX_SECRET_BYTES) {
    throw new Error('WEBHOOK_SECRET is not a ' +
      `subscription's secret: whsec_ and ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes in base64 ` +
      '(the `secret` of the answer to POST /webhooks, or GET /webhooks/{id}/secret)')
  }
}

/** The largest body read: events are far smaller. */
const MAX_BODY_BYTES = 1024 * 1024

/** The webhook-ids handled so far, oldest first, at most `limit` of them. */
class RecentIds {
  readonly #ids = new Set<string>()
  constructor (readonly limit: number) {}

  has (id: string): boolean {
    return this.#ids.has(id)
  }

  add (id: string): void {
    this.#ids.add(id)
    // A Set iterates in insertion order: the first one is the oldest.
    if (this.#ids.size > this.limit) this.#ids.delete(this.#ids.values().next().value as string)
  }
}

async function readBody (req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_BODY_BYTES) return undefined
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

const header = (req: IncomingMessage, name: string): string => {
  const value = req.headers[name]
  return typeof value === 'string' ? value : ''
}

/** Starts the receiver; resolves once it listens. */
export async function startWebhookReceiver (options: ReceiverOptions): Promise<RunningReceiver> {
  checkSecret(options.secret)
  const webhook = new Webhook(options.secret)
  const seen = new RecentIds(options.remember ?? 10_000)
  const log = options.log ?? console.log

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end()
      return
    }
    const body = await readBody(req)
    if (body === undefined) {
      res.writeHead(413).end()
      return
    }
    const id = header(req, 'webhook-id')
    let event: PlantStoreEvent
    try {
      // Checks the signature over "id.timestamp.body" and that the timestamp is recent (replays).
      event = webhook.verify(body, {
        'webhook-id': id,
        'webhook-timestamp': header(req, 'webhook-timestamp'),
        'webhook-signature': header(req, 'webhook-signature')
      }) as PlantStoreEvent
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err
      log(`refused ${id === '' ? 'a request' : id}: ${err.message}`)
      res.writeHead(401).end()
      return
    }
    if (seen.has(id)) {
      // Delivered again (our earlier answer was lost, or a retry was asked for): already handled.
      // Answer 2xx all the same, or the sender keeps retrying.
      log(`duplicate ${id}: already handled`)
      res.writeHead(204).end()
      return
    }
    seen.add(id)
    log(`${describe(event)} (${id})`)
    res.writeHead(204).end()
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log(`error: ${err instanceof Error ? err.message : String(err)}`)
      if (!res.headersSent) res.writeHead(500)
      res.end()
    })
  })
  const host = options.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/`,
    port,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

// Run as a program: configured by the environment.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const secret = process.env.WEBHOOK_SECRET
  if (secret === undefined || secret === '') {
    process.stderr.write(
      'Set WEBHOOK_SECRET to the subscription\'s secret (whsec_..., in the answer to POST /webhooks).\n')
    process.exit(2)
  }
  try {
    checkSecret(secret)
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`)
    process.exit(2)
  }
  const receiver = await startWebhookReceiver({
    secret,
    port: Number(process.env.PORT ?? 4000),
    ...(process.env.HOST !== undefined && { host: process.env.HOST })
  })
  console.log(`listening on ${receiver.url}`)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => { void receiver.close() })
  }
}
