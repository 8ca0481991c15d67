import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { ConfigError } from '../../../src/lib/errors.js'
import { loadConfig, type Config } from '../../../src/config/load-config.js'
import { assertConfigRefused } from '../../helpers/config.js'

test('operations settings: defaults leave metrics, tracing and proxies off, and wait 30 s for PostgreSQL', () => {
  const config = loadConfig({})
  assert.equal(config.metrics, undefined)
  assert.equal(config.tracing, undefined)
  assert.equal(config.trustProxy, false)
  assert.equal(config.pgStartupTimeoutMs, 30_000)
  assert.equal(config.pgConnectTimeoutMs, 5000)
  assert.equal(config.shutdownDelayMs, 0)
  assert.match(config.version, /^\d+\.\d+\.\d+/)
})

test('operations settings are read from the environment', () => {
  const config = loadConfig({
    METRICS_PORT: '9464',
    METRICS_HOST: '0.0.0.0',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.internal:4318/',
    OTEL_SERVICE_NAME: 'plants-eu',
    PG_STARTUP_TIMEOUT_MS: '0',
    SHUTDOWN_DELAY_MS: '5000'
  })
  assert.deepEqual(config.metrics, { port: 9464, host: '0.0.0.0' })
  assert.deepEqual(config.tracing, {
    tracesUrl: 'http://collector.internal:4318/v1/traces',
    protocol: 'http/protobuf',
    serviceName: 'plants-eu'
  })
  assert.equal(config.pgStartupTimeoutMs, 0)
  assert.equal(config.shutdownDelayMs, 5000)
  assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example/base' }).tracing?.tracesUrl,
    'https://otel.example/base/v1/traces')
  // The OTLP variables as the specification has them: the per-signal endpoint as it is, and wins;
  // the per-signal protocol wins; gRPC takes the base endpoint as it is.
  const tracing = (env: NodeJS.ProcessEnv): Config['tracing'] => loadConfig(env).tracing
  assert.deepEqual(tracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom' }), {
    tracesUrl: 'http://c:4318/custom',
    protocol: 'http/protobuf',
    serviceName: 'plant-store'
  })
  assert.equal(
    tracing({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/t'
    })?.tracesUrl, 'http://b:4318/t')
  assert.equal(
    tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })?.protocol,
    'http/json')
  assert.equal(
    tracing({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf'
    })?.protocol, 'http/protobuf')
  assert.deepEqual(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), {
    tracesUrl: 'http://a:4317/',
    protocol: 'grpc',
    serviceName: 'plant-store'
  })
  assert.equal(tracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: ' ' }), undefined)
  assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }).tracing, undefined)
  assert.deepEqual(loadConfig({ METRICS_PORT: '0' }).metrics, { port: 0, host: '127.0.0.1' })
})

test('TRUST_PROXY: off, a hop count, or addresses and CIDRs as Fastify takes them', () => {
  const trust = (value: string): unknown => loadConfig({ TRUST_PROXY: value }).trustProxy
  assert.equal(trust(''), false)
  assert.equal(trust('0'), false)
  assert.equal(trust('false'), false)
  assert.equal(trust('1'), 1)
  assert.equal(trust('2'), 2)
  assert.deepEqual(trust('10.0.0.1'), ['10.0.0.1'])
  assert.deepEqual(trust(' 10.0.0.0/8 , 192.168.1.7,::1, fd00::/8 ,loopback'),
    ['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8', 'loopback'])
})

test('TRUST_PROXY: ranges that together trust every IPv4 or every IPv6 client are refused like `true`', () => {
  const cases: Array<[string, string]> = [
    ['0.0.0.0/1,128.0.0.0/1', 'IPv4'],
    ['128.0.0.0/1, 10.0.0.1, 0.0.0.0/2, 64.0.0.0/2', 'IPv4'],
    ['::ffff:0:0/96', 'IPv4'],
    ['::ffff:0:0/97,128.0.0.0/1', 'IPv4'],
    ['::/1,8000::/1', 'IPv6'],
    // ::/1 holds ::ffff:0:0/96: proxy-addr matches every IPv4 client against it.
    ['::/1', 'IPv4'],
    ['8000::/1,::/2,4000::/2,loopback', 'IPv6']
  ]
  assertConfigRefused(
    cases.map(
      ([value, family]) => [{ TRUST_PROXY: value },
        new RegExp(`TRUST_PROXY .* trusts every ${family} address, as \`true\` would`)]))
  // Half the space, or all of it but one address, is a (strange) list of proxies, not everyone.
  assert.deepEqual(loadConfig({ TRUST_PROXY: '0.0.0.0/1' }).trustProxy, ['0.0.0.0/1'])
  assert.deepEqual(loadConfig({ TRUST_PROXY: '0.0.0.0/1,128.0.0.0/2,192.0.0.0/3,224.0.0.0/4' }).trustProxy,
    ['0.0.0.0/1', '128.0.0.0/2', '192.0.0.0/3', '224.0.0.0/4'])
  assert.deepEqual(loadConfig({ TRUST_PROXY: '8000::/1,2000::/3' }).trustProxy, ['8000::/1', '2000::/3'])
})

test('TRUST_PROXY: every value the configuration accepts, Fastify accepts too (check and serve agree)', () => {
  const values = ['1', '10.0.0.1', '10.0.0.0/8', '10.0.0.0/1', '10.0.0.0/32', '::1', 'fd00::/8', '::/1', '::1/128',
    'loopback,linklocal,uniquelocal',
    '0.0.0.0/0', '::/0', '10.0.0.0/255.0.0.0', '10.0.0.0/33', 'true', '0.0.0.0/1,128.0.0.0/1']
  for (const value of values) {
    let trustProxy: Config['trustProxy']
    try {
      trustProxy = loadConfig({ TRUST_PROXY: value }).trustProxy
    } catch (err) {
      assert.ok(err instanceof ConfigError, value)
      continue
    }
    // A hop count becomes a function in src/main/app.ts; addresses and ranges go to Fastify as they are.
    if (typeof trustProxy !== 'number') assert.doesNotThrow(() => Fastify({ trustProxy }), value)
  }
})

test('a bad operations setting stops the start with a message that names it', () => {
  const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{ METRICS_PORT: 'ninety' }, /METRICS_PORT must be integer/],
    [{ METRICS_PORT: '70000' }, /METRICS_PORT must be <= 65535/],
    [{ METRICS_PORT: '3000' }, /METRICS_PORT must differ from PORT/],
    [{ PORT: '8080', METRICS_PORT: '8080' }, /METRICS_PORT must differ from PORT/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      /OTEL_EXPORTER_OTLP_ENDPOINT must be an http:\/\/ or https:\/\/ URL/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' },
      /OTEL_EXPORTER_OTLP_ENDPOINT must be an http:\/\/ or https:\/\/ URL/],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' },
      /OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http:\/\/ or https:\/\/ URL/],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'http' }, /OTEL_EXPORTER_OTLP_PROTOCOL must be equal to one of the allowed values/],
    [{ OTEL_EXPORTER_OTLP_TIMEOUT: 'soon' }, /OTEL_EXPORTER_OTLP_TIMEOUT must be integer/],
    [{ PG_STARTUP_TIMEOUT_MS: 'forever' }, /PG_STARTUP_TIMEOUT_MS must be integer/],
    [{ PG_STARTUP_TIMEOUT_MS: '-1' }, /PG_STARTUP_TIMEOUT_MS must be >= 0/],
    [{ SHUTDOWN_DELAY_MS: 'soon' }, /SHUTDOWN_DELAY_MS must be integer/],
    [{ TRUST_PROXY: 'true' },
      /TRUST_PROXY must be a hop count or a comma-separated list of IP addresses or CIDRs \(not "true"\)/],
    [{ TRUST_PROXY: '10.0.0.0/33' }, /TRUST_PROXY .*\(not "10\.0\.0\.0\/33"\)/],
    [{ TRUST_PROXY: '10.0.0/8' }, /TRUST_PROXY .*\(not "10\.0\.0\/8"\)/],
    [{ TRUST_PROXY: '::1/129' }, /TRUST_PROXY .*\(not "::1\/129"\)/],
    [{ TRUST_PROXY: '10.0.0.1/8/8' }, /TRUST_PROXY .*\(not "10\.0\.0\.1\/8\/8"\)/],
    [{ TRUST_PROXY: '10.0.0.1/x' }, /TRUST_PROXY .*\(not "10\.0\.0\.1\/x"\)/],
    [{ TRUST_PROXY: 'proxy.internal' }, /TRUST_PROXY .*\(not "proxy\.internal"\)/],
    [{ TRUST_PROXY: '1000' }, /TRUST_PROXY hop count must be at most 100/],
    [{ TRUST_PROXY: '0.0.0.0/0' }, /TRUST_PROXY .*\(not "0\.0\.0\.0\/0"\)/],
    [{ TRUST_PROXY: '::/0' }, /TRUST_PROXY .*\(not "::\/0"\)/],
    [{ TRUST_PROXY: '10.0.0.0/255.0.0.0' }, /TRUST_PROXY .*\(not "10\.0\.0\.0\/255\.0\.0\.0"\)/]
  ]
  assertConfigRefused(cases)
})
