import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import protobuf from 'protobufjs'

/** One span as an OTLP export carries it (ids in hex), with its resource's attributes. */
export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  /** 1 internal, 2 server, 3 client. */
  kind: number
  attributes: Record<string, unknown>
  /** code: 0 unset, 1 ok, 2 error. */
  status?: { code?: number, message?: string }
  resource: Record<string, unknown>
}

/** One export request as it arrived. */
export interface ReceivedExport {
  method: string
  path: string
  contentType: string
  headers: IncomingHttpHeaders
}

interface OtlpValue { stringValue?: string, intValue?: string | number, boolValue?: boolean, doubleValue?: number }
interface OtlpAttribute { key: string, value?: OtlpValue }
type OtlpSpan = Omit<ReceivedSpan, 'attributes' | 'resource' | 'traceId' | 'spanId' | 'parentSpanId'> & {
  traceId: string | Uint8Array
  spanId: string | Uint8Array
  parentSpanId?: string | Uint8Array
  attributes?: OtlpAttribute[]
}
interface OtlpExport {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] }
    scopeSpans?: Array<{ spans?: OtlpSpan[] }>
  }>
}

/**
 * The part of OTLP's trace service request (opentelemetry-proto, collector/trace/v1 and trace/v1)
 * these tests read, with the field numbers of the real definition: protobufjs decodes
 * http/protobuf exports with it and skips every field left out.
 */
const TRACE_PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { repeated Span spans = 2; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5; int32 kind = 6;
  repeated KeyValue attributes = 9; Status status = 15;
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; }
}
`
const ExportTraceServiceRequest = protobuf.parse(TRACE_PROTO).root.lookupType('otlp.ExportTraceServiceRequest')

const attributes = (list: OtlpAttribute[] = []): Record<string, unknown> => Object.fromEntries(list.map(({
  key,
  value = {}
}) =>
  [key, value.stringValue ?? (value.intValue === undefined ? undefined : Number(value.intValue)) ?? value.boolValue ??
    value.doubleValue]))

/** JSON carries ids in hex, protobuf as bytes. */
const hex = (id: string | Uint8Array | undefined): string | undefined => id === undefined ||
  typeof id === 'string'
  ? id
  : Buffer.from(id).toString('hex')

function decode (body: Buffer, contentType: string): OtlpExport {
  if (contentType === 'application/json') return JSON.parse(body.toString('utf8')) as OtlpExport
  if (contentType === 'application/x-protobuf') {
    return ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), { longs: String }) as OtlpExport
  }
  throw new Error(`unexpected content-type ${contentType}`)
}

/**
 * A loopback OTLP/HTTP trace receiver on 127.0.0.1: takes http/json and http/protobuf exports on
 * any path, records each request, and collects every span. `failing(true)` answers 400 (an
 * error the exporter does not retry) and collects nothing, until `failing(false)`.
 */
export async function startOtlpReceiver (): Promise<{
  endpoint: string
  spans: ReceivedSpan[]
  /** `METHOD /path content-type` of each export. */
  paths: string[]
  exports: ReceivedExport[]
  failing: (fail: boolean) => void
  close: () => Promise<void>
}> {
  const spans: ReceivedSpan[] = []
  const paths: string[] = []
  const exports: ReceivedExport[] = []
  let fail = false
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => { chunks.push(chunk) })
    request.on('end', () => {
      const contentType = request.headers['content-type'] ?? ''
      paths.push(`${request.method ?? ''} ${request.url ?? ''} ${contentType}`)
      exports.push({ method: request.method ?? '', path: request.url ?? '', contentType, headers: request.headers })
      if (fail) {
        response.writeHead(400, { 'content-type': 'text/plain' }).end('refused')
        return
      }
      for (const resourceSpans of decode(Buffer.concat(chunks), contentType).resourceSpans ?? []) {
        const resource = attributes(resourceSpans.resource?.attributes)
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            const { parentSpanId: parent, ...rest } = span
            const parentSpanId = hex(parent)
            spans.push({
              ...rest,
              traceId: hex(span.traceId) ?? '',
              spanId: hex(span.spanId) ?? '',
              ...(parentSpanId !== undefined && { parentSpanId }),
              attributes: attributes(span.attributes),
              resource
            })
          }
        }
      }
      if (contentType === 'application/json') response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      else response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    paths,
    exports,
    failing: (on) => { fail = on },
    close: async () => { await new Promise<void>((resolve) => server.close(() => resolve())) }
  }
}
