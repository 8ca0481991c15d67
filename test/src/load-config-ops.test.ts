import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadConfig } from '../../src/load-config.js'
import { assertConfigRefused } from '../helpers/config.js'

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
  assert.deepEqual(config.tracing, { tracesUrl: 'http://collector.internal:4318/v1/traces', serviceName: 'plants-eu' })
  assert.equal(config.pgStartupTimeoutMs, 0)
  assert.equal(config.shutdownDelayMs, 5000)
  assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example/base' }).tracing?.tracesUrl, 'https://otel.example/base/v1/traces')
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
  assert.deepEqual(trust(' 10.0.0.0/8 , 192.168.1.7,::1, fd00::/8 ,loopback'), ['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8', 'loopback'])
})

test('a bad operations setting stops the start with a message that names it', () => {
  const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{ METRICS_PORT: 'ninety' }, /METRICS_PORT must be integer/],
    [{ METRICS_PORT: '70000' }, /METRICS_PORT must be <= 65535/],
    [{ METRICS_PORT: '3000' }, /METRICS_PORT must differ from PORT/],
    [{ PORT: '8080', METRICS_PORT: '8080' }, /METRICS_PORT must differ from PORT/],
    [{ METRICS_HOST: '' }, /METRICS_HOST must NOT have fewer than 1 characters/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /OTEL_EXPORTER_OTLP_ENDPOINT must be an http:\/\/ or https:\/\/ URL/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' }, /OTEL_EXPORTER_OTLP_ENDPOINT must be an http:\/\/ or https:\/\/ URL/],
    [{ PG_STARTUP_TIMEOUT_MS: 'forever' }, /PG_STARTUP_TIMEOUT_MS must be integer/],
    [{ PG_STARTUP_TIMEOUT_MS: '-1' }, /PG_STARTUP_TIMEOUT_MS must be >= 0/],
    [{ SHUTDOWN_DELAY_MS: 'soon' }, /SHUTDOWN_DELAY_MS must be integer/],
    [{ TRUST_PROXY: 'true' }, /TRUST_PROXY must be a hop count or a comma-separated list of IP addresses or CIDRs \(not "true"\)/],
    [{ TRUST_PROXY: '10.0.0.0/33' }, /TRUST_PROXY .*\(not "10\.0\.0\.0\/33"\)/],
    [{ TRUST_PROXY: '10.0.0/8' }, /TRUST_PROXY .*\(not "10\.0\.0\/8"\)/],
    [{ TRUST_PROXY: '::1/129' }, /TRUST_PROXY .*\(not "::1\/129"\)/],
    [{ TRUST_PROXY: '10.0.0.1/8/8' }, /TRUST_PROXY .*\(not "10\.0\.0\.1\/8\/8"\)/],
    [{ TRUST_PROXY: '10.0.0.1/x' }, /TRUST_PROXY .*\(not "10\.0\.0\.1\/x"\)/],
    [{ TRUST_PROXY: 'proxy.internal' }, /TRUST_PROXY .*\(not "proxy\.internal"\)/],
    [{ TRUST_PROXY: '1000' }, /TRUST_PROXY hop count must be at most 100/]
  ]
  assertConfigRefused(cases)
})
