import { Type, type Static, type TObject } from '@sinclair/typebox'
import { ConfigError } from '../lib/errors.js'

const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number]

/** The OTEL_* settings: their part of EnvSchema (src/config/load-config.ts composes them, in this order). */
export const TRACING_SETTINGS = {
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(
    Type.String({
      description:
        "The OTLP collector's base URL: traces go to `<this URL>/v1/traces` over HTTP; unset (with " +
        '`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): no tracing, and no OpenTelemetry package is loaded.'
    })
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Type.Optional(
    Type.String({
      description:
        'The full URL traces are exported to (no /v1/traces is added); set alone, it turns tracing on as ' +
        'OTEL_EXPORTER_OTLP_ENDPOINT does.'
    })
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: Type.Optional(
    Type.Unsafe<OtlpProtocol>({
      type: 'string',
      enum: OTLP_PROTOCOLS,
      description: "The OTLP encoding and transport: http/protobuf (the specification's default), http/json or grpc."
    })
  ),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Type.Optional(
    Type.Unsafe<OtlpProtocol>({
      type: 'string',
      enum: OTLP_PROTOCOLS,
      description: 'OTEL_EXPORTER_OTLP_PROTOCOL for traces only; wins over it.'
    })
  ),
  OTEL_EXPORTER_OTLP_HEADERS: Type.Optional(
    Type.String({
      description:
        'Headers sent with every export, as key=value pairs separated by commas (e.g. an API key for the collector); ' +
        'read by the OpenTelemetry SDK.'
    })
  ),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: Type.Optional(
    Type.String({ description: 'OTEL_EXPORTER_OTLP_HEADERS for traces only; wins over it.' })
  ),
  OTEL_EXPORTER_OTLP_TIMEOUT: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: "How long one export may take, in milliseconds (the SDK's default: 10000)."
    })
  ),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: Type.Optional(
    Type.Integer({ minimum: 1, description: 'OTEL_EXPORTER_OTLP_TIMEOUT for traces only; wins over it.' })
  ),
  OTEL_SERVICE_NAME: Type.String({
    minLength: 1,
    default: 'plant-store',
    description: 'The `service.name` of the traces.'
  })
}

type TracingEnv = Static<TObject<typeof TRACING_SETTINGS>>

export interface TracingConfig { tracesUrl: string, protocol: OtlpProtocol, serviceName: string }

/** Tracing is on when either endpoint is set; the protocol decides the traces URL's path. */
export function tracingConfig (parsed: TracingEnv): TracingConfig | undefined {
  const protocol = parsed.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? parsed.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf'
  const tracesUrl = otlpTracesUrl(
    parsed.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    parsed.OTEL_EXPORTER_OTLP_ENDPOINT,
    protocol
  )
  return tracesUrl === undefined ? undefined : { tracesUrl, protocol, serviceName: parsed.OTEL_SERVICE_NAME }
}

/**
 * Where traces go, as the OpenTelemetry specification (and the SDK, which does the sending) has it:
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else the base OTEL_EXPORTER_OTLP_ENDPOINT plus
 * `/v1/traces` over HTTP. Both empty or unset: no tracing.
 */
function otlpTracesUrl (
  tracesEndpoint: string | undefined,
  endpoint: string | undefined,
  protocol: OtlpProtocol
): string | undefined {
  const url = (name: string, value: string): URL => {
    let parsed: URL
    try {
      parsed = new URL(value)
    } catch {
      throw new ConfigError(`invalid configuration: ${name} must be an http:// or https:// URL`)
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ConfigError(`invalid configuration: ${name} must be an http:// or https:// URL`)
    }
    return parsed
  }
  const base = endpoint?.trim() === '' ? undefined : endpoint?.trim()
  const signal = tracesEndpoint?.trim() === '' ? undefined : tracesEndpoint?.trim()
  const baseUrl = base === undefined ? undefined : url('OTEL_EXPORTER_OTLP_ENDPOINT', base)
  if (signal !== undefined) return url('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', signal).href
  if (baseUrl === undefined) return undefined
  // gRPC names the service, not a path: the endpoint is used as it is.
  return protocol === 'grpc' ? baseUrl.href : `${baseUrl.href.replace(/\/+$/, '')}/v1/traces`
}
