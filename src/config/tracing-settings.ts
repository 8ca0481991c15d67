import { Type, type Static, type TObject } from '@sinclair/typebox'
import { ConfigError } from '../lib/errors.js'
import { integerSetting, stringSetting } from './setting-types.js'

const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const
type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number]

/** The OTEL_* settings: their part of EnvSchema (src/config/load-config.ts composes them, in this order). */
export const TRACING_SETTINGS = {
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String({
    description:
      "The OTLP collector's base URL: traces go to `<this URL>/v1/traces` over HTTP; unset (with " +
      '`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): no tracing, and no OpenTelemetry package is loaded.'
  })),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Type.Optional(Type.String({
    description:
      'The full URL traces are exported to (no /v1/traces is added); set alone, it turns tracing on as ' +
      'OTEL_EXPORTER_OTLP_ENDPOINT does.'
  })),
  OTEL_EXPORTER_OTLP_PROTOCOL: Type.Optional(Type.Unsafe<OtlpProtocol>({
    type: 'string',
    enum: OTLP_PROTOCOLS,
    description: "The OTLP encoding and transport: http/protobuf (the specification's default), http/json or grpc."
  })),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Type.Optional(Type.Unsafe<OtlpProtocol>({
    type: 'string', enum: OTLP_PROTOCOLS, description: 'OTEL_EXPORTER_OTLP_PROTOCOL for traces only; wins over it.'
  })),
  OTEL_EXPORTER_OTLP_HEADERS: Type.Optional(Type.String({
    description:
      'Headers sent with every export, as key=value pairs separated by commas (e.g. an API key for the collector); ' +
      'read by the OpenTelemetry SDK.'
  })),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: Type.Optional(Type.String({
    description: 'OTEL_EXPORTER_OTLP_HEADERS for traces only; wins over it.'
  })),
  OTEL_EXPORTER_OTLP_TIMEOUT: Type.Optional(integerSetting({ minimum: 1 },
    "How long one export may take, in milliseconds (the SDK's default: 10000).")),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: Type.Optional(integerSetting({ minimum: 1 },
    'OTEL_EXPORTER_OTLP_TIMEOUT for traces only; wins over it.')),
  OTEL_SERVICE_NAME: stringSetting({ minLength: 1, default: 'plant-store' }, 'The `service.name` of the traces.')
}

type TracingEnv = Static<TObject<typeof TRACING_SETTINGS>>

interface TracingConfig { tracesUrl: string, protocol: OtlpProtocol, serviceName: string }

/**
 * Where traces go, as the OpenTelemetry specification (and the SDK, which sends them) has it: the traces endpoint
 * as it is, else the base endpoint plus `/v1/traces` over HTTP. Neither set: no tracing.
 */
export function tracingConfig (parsed: TracingEnv): TracingConfig | undefined {
  const protocol = parsed.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? parsed.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf'
  const base = httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', parsed.OTEL_EXPORTER_OTLP_ENDPOINT)
  let tracesUrl = httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', parsed.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)?.href
  if (tracesUrl === undefined && base !== undefined) {
    // gRPC names the service, not a path: the endpoint is used as it is.
    tracesUrl = protocol === 'grpc' ? base.href : `${base.href.replace(/\/+$/, '')}/v1/traces`
  }
  return tracesUrl === undefined ? undefined : { tracesUrl, protocol, serviceName: parsed.OTEL_SERVICE_NAME }
}

/** The setting's http(s) URL; undefined when it is unset or blank. */
function httpUrl (name: string, value: string | undefined): URL | undefined {
  const text = value?.trim() ?? ''
  if (text === '') return undefined
  const url = URL.canParse(text) ? new URL(text) : undefined
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ConfigError(`invalid configuration: ${name} must be an http:// or https:// URL`)
  }
  return url
}
