import * as http from 'node:http'
import * as https from 'node:https'
import { isServiceError } from '../lib/errors.js'
import { storableText } from './rows.js'
import {
  parseWebhookUrl, pinnedLookup, resolveWebhookTarget, type AddressPolicy, type ResolvedAddress
} from './url-policy.js'

/** How much of a receiver's answer is read: its status is what counts. */
const MAX_RESPONSE_BYTES = 4096
/** How much of the answer's body is kept with the attempt, for its owner to inspect. */
export const KEPT_RESPONSE_BYTES = 1024

export interface AttemptRequest {
  url: string
  headers: Record<string, string>
  body: string
}

/** http.request's shape, so tests can prove that no connection is made. */
export type RequestFunction = (url: URL, options: https.RequestOptions) => http.ClientRequest

export interface AttemptOptions {
  policy: AddressPolicy
  /** The whole attempt: resolving, connecting, sending, and the status line. */
  timeoutMs: number
  maxResponseBytes?: number
  signal?: AbortSignal
  request?: RequestFunction
  pool?: ConnectionPool
}

type AttemptFailure =
  'timeout' | 'connection' | 'invalid-url' | 'url-not-allowed' | 'url-unresolvable' | 'aborted' | 'internal'

export type AttemptResult =
  | {
    kind: 'response'
    statusCode: number
    /** The first KEPT_RESPONSE_BYTES of the body (UTF-8; zero bytes and bytes that are not UTF-8 as U+FFFD). */
    body: string
  }
  | { kind: 'error', reason: AttemptFailure, message: string }

const defaultRequest: RequestFunction = (url, options) =>
  url.protocol === 'https:' ? https.request(url, options) : http.request(url, options)

const IDLE_CONNECTION_MS = 4000
/** Connections open at once to one receiver (origin and checked address); more attempts queue for one. */
export const MAX_SOCKETS_PER_TARGET = 32
/** Receivers (checked addresses) with connections kept at once; the least recently used go first. */
const MAX_POOLED_TARGETS = 256

interface ConnectionPool {
  agentFor: (url: URL, target: ResolvedAddress) => http.Agent
  close: () => void
}

/** One pool per checked receiver address: a pooled socket serves only the address its attempt's own check allowed. */
export function createConnectionPool (): ConnectionPool {
  const agents = new Map<string, http.Agent>()
  return {
    agentFor (url, target) {
      const key = `${url.protocol}//${url.host}@${target.address}`
      let agent = agents.get(key)
      if (agent !== undefined) {
        agents.delete(key)
      } else {
        const settings = {
          keepAlive: true,
          timeout: IDLE_CONNECTION_MS,
          scheduling: 'lifo' as const,
          maxSockets: MAX_SOCKETS_PER_TARGET,
          // Every idle one kept, as a browser does: fewer would close a burst's connections and reopen them next burst.
          maxFreeSockets: MAX_SOCKETS_PER_TARGET
        }
        agent = url.protocol === 'https:' ? new https.Agent(settings) : new http.Agent(settings)
        const [oldest] = agents
        if (agents.size >= MAX_POOLED_TARGETS && oldest !== undefined) {
          agents.delete(oldest[0])
          oldest[1].destroy()
        }
      }
      agents.set(key, agent)
      return agent
    },
    close () {
      for (const agent of agents.values()) agent.destroy()
      agents.clear()
    }
  }
}

class AttemptTimeout extends Error { override name = 'AttemptTimeout' }

/** The URL is checked again (its host may resolve elsewhere by now); redirects are never followed. Never rejects. */
export async function attemptDelivery (request: AttemptRequest, options: AttemptOptions): Promise<AttemptResult> {
  const controller = new AbortController()
  const timer = setTimeout(() => {
    controller.abort(new AttemptTimeout(`no answer within ${options.timeoutMs} ms`))
  }, options.timeoutMs)
  const stop = (): void => { controller.abort(options.signal?.reason) }
  if (options.signal?.aborted === true) stop()
  else options.signal?.addEventListener('abort', stop, { once: true })
  try {
    const url = parseWebhookUrl(request.url)
    const target = await resolveWebhookTarget(url, options.policy, controller.signal)
    const sent = await send(url, target, request, options, controller.signal)
    // A kept-alive connection closed just as it was reused says nothing about the receiver: send again at once.
    if (sent.reusedConnection && sent.result.kind === 'error' && sent.result.reason === 'connection') {
      const { pool: _pool, ...unpooled } = options
      return (await send(url, target, request, unpooled, controller.signal)).result
    }
    return sent.result
  } catch (err) {
    return failure(err, controller.signal)
  } finally {
    clearTimeout(timer)
    options.signal?.removeEventListener('abort', stop)
  }
}

function failure (err: unknown, signal: AbortSignal): AttemptResult {
  if (signal.aborted) {
    const timedOut = signal.reason instanceof AttemptTimeout
    return {
      kind: 'error',
      reason: timedOut ? 'timeout' : 'aborted',
      message: timedOut ? (signal.reason as Error).message : 'the attempt was abandoned (stopping)'
    }
  }
  if (isServiceError(err)) {
    const reason = err.code === 'url-not-allowed' || err.code === 'url-unresolvable' ? err.code : 'invalid-url'
    return { kind: 'error', reason, message: err.message }
  }
  const code = (err as { code?: unknown }).code
  const message = err instanceof Error ? err.message : String(err)
  return {
    kind: 'error',
    reason: 'connection',
    message: typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message
  }
}

async function send (
  url: URL, target: ResolvedAddress, { headers, body }: AttemptRequest, options: AttemptOptions, signal: AbortSignal
): Promise<{ result: AttemptResult; reusedConnection: boolean }> {
  const maxBytes = options.maxResponseBytes ?? MAX_RESPONSE_BYTES
  return await new Promise((resolve) => {
    let statusCode: number | undefined
    let settled = false
    const kept: Buffer[] = []
    const response = (): AttemptResult => ({
      kind: 'response',
      statusCode: statusCode as number,
      body: storableText(Buffer.concat(kept).subarray(0, KEPT_RESPONSE_BYTES).toString('utf8'))
    })
    const settle = (result: AttemptResult, keepConnection = false): void => {
      if (settled) return
      settled = true
      resolve({ result, reusedConnection: req.reusedSocket })
      // Only an answer read to its end leaves its connection to the pool.
      if (!keepConnection) req.destroy()
    }
    const answered = (): void => { settle(response()) }
    const req = (options.request ?? defaultRequest)(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': Buffer.byteLength(body) },
      lookup: pinnedLookup(target),
      agent: options.pool?.agentFor(url, target) ?? false,
      signal
    })
    req.on('response', (res) => {
      statusCode = res.statusCode ?? 0
      let read = 0
      res.on('data', (chunk: Buffer) => {
        if (read < KEPT_RESPONSE_BYTES) kept.push(chunk)
        read += chunk.length
        if (read >= maxBytes) answered()
      })
      res.on('end', () => { settle(response(), true) })
      // The status is in: a body cut short changes nothing.
      res.on('error', answered)
      res.on('close', answered)
    })
    req.on('error', (err) => {
      if (statusCode !== undefined) answered()
      else settle(failure(err, signal))
    })
    // A socket that closes without an error or an answer still ends the attempt.
    req.on('close', () => {
      if (statusCode !== undefined) answered()
      else settle({ kind: 'error', reason: 'connection', message: 'the connection closed without an answer' })
    })
    req.end(body)
  })
}
