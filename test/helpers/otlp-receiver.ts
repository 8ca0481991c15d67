import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One span as OTLP/HTTP JSON carries it (ids in hex), with its resource's attributes. */
export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  /** 1 internal, 2 server, 3 client. */
  kind: number
  attributes: Record<string, unknown>
  status?: { code?: number, message?: string }
  resource: Record<string, unknown>
}

interface OtlpValue { stringValue?: string, intValue?: string | number, boolValue?: boolean, doubleValue?: number }
interface OtlpAttribute { key: string, value: OtlpValue }
interface OtlpExport {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] }
    scopeSpans?: Array<{ spans?: Array<Omit<ReceivedSpan, 'attributes' | 'resource'> & { attributes?: OtlpAttribute[] }> }>
  }>
}

const attributes = (list: OtlpAttribute[] = []): Record<string, unknown> => Object.fromEntries(list.map(({ key, value }) =>
  [key, value.stringValue ?? (value.intValue === undefined ? undefined : Number(value.intValue)) ?? value.boolValue ?? value.doubleValue]))

/**
 * A loopback OTLP/HTTP trace receiver (JSON encoding, as @opentelemetry/exporter-trace-otlp-http
 * sends it) on 127.0.0.1: collects every span POSTed to /v1/traces.
 */
export async function startOtlpReceiver (): Promise<{ endpoint: string, spans: ReceivedSpan[], paths: string[], close: () => Promise<void> }> {
  const spans: ReceivedSpan[] = []
  const paths: string[] = []
  const server: Server = createServer((request, response) => {
    let body = ''
    request.setEncoding('utf8').on('data', (chunk: string) => { body += chunk })
    request.on('end', () => {
      paths.push(`${request.method ?? ''} ${request.url ?? ''} ${request.headers['content-type'] ?? ''}`)
      const decoded = JSON.parse(body) as OtlpExport
      for (const resourceSpans of decoded.resourceSpans ?? []) {
        const resource = attributes(resourceSpans.resource?.attributes)
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) spans.push({ ...span, attributes: attributes(span.attributes), resource })
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    paths,
    close: async () => { await new Promise<void>((resolve) => server.close(() => resolve())) }
  }
}
