import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { cleanupStack } from '../helpers/cleanup.js'
import { alertingRules, DASHBOARD, metricNames, REPO } from '../helpers/monitoring.js'
import { TEST_DATABASE_URL } from '../helpers/postgres.js'
import { AUTH_A, sandboxSchemaUrl } from '../helpers/sandbox.js'
import { bannerLine, startServer } from '../helpers/server-process.js'

interface Target { refId: string, expr: string, datasource: { uid: string } }
interface Panel { id: number, type: string, title: string, datasource?: { uid: string }, targets?: Target[] }
interface Dashboard {
  uid: string
  panels: Panel[]
  templating: { list: Array<{ name: string, type: string, query: string | { query: string } }> }
}

/** Grafana's reference to the dashboard's datasource variable. */
const DATASOURCE = '$' + '{datasource}'

const dashboard = (): Dashboard => JSON.parse(readFileSync(join(REPO, DASHBOARD), 'utf8')) as Dashboard

/** Every PromQL query of the dashboard, by where it is: its panels' targets and its variables. */
function queries (): Array<{ where: string, expr: string }> {
  const { panels, templating } = dashboard()
  return [
    ...panels.flatMap(
      (panel) => (panel.targets ?? []).map(
        (target) => ({ where: `${panel.title} ${target.refId}`, expr: target.expr }))),
    ...templating.list.filter((variable) => variable.type === 'query').map((variable) => ({
      where: `variable ${variable.name}`,
      expr: (typeof variable.query === 'string' ? variable.query : variable.query.query).replace(
        /^label_values\((.*), *\w+\)$/, '$1')
    }))
  ]
}

/** The sample names of an exposition: `x_bucket`, `x_count`, `x_sum` of a histogram, as PromQL selects them. */
function exported (text: string): Set<string> {
  return new Set(text.split('\n').filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? ''))
}

test('metricNames finds the series of a query, never its functions, labels, keywords or variables', () => {
  assert.deepEqual(
    metricNames(
      'histogram_quantile(0.99, sum by (route, le) (rate(a_bucket{job="x",route!~"/h.*"}[$__rate_interval])))'),
    ['a_bucket'])
  assert.deepEqual(
    metricNames('sum(rate(b_count{s=~"5.."}[5m])) / sum(rate(b_count[5m])) > 0.01 and on (job) max(c) > bool 1'),
    ['b_count', 'c'])
  assert.deepEqual(metricNames('max by (job) (deriv(d{job="plant-store"}[15m])) > 0 unless e offset 5m'), ['d', 'e'])
})

test('the dashboard: every panel on the datasource variable, ids unique, each query with a refId; the ' +
  'issue\'s panels are there', () => {
  const { uid, panels } = dashboard()
  assert.equal(uid, 'plant-store')
  assert.equal(new Set(panels.map((panel) => panel.id)).size, panels.length)
  const graphs = panels.filter((panel) => panel.type !== 'row')
  for (const panel of graphs) {
    assert.equal(panel.datasource?.uid, DATASOURCE, panel.title)
    assert.ok((panel.targets ?? []).length > 0, panel.title)
    for (const target of panel.targets ?? []) assert.equal(target.datasource.uid, DATASOURCE, panel.title)
  }
  const named = new Set(queries().flatMap(({ expr }) => metricNames(expr)))
  for (const name of ['http_request_duration_seconds_count', 'http_request_duration_seconds_bucket',
    'plantstore_database_up',
    'plantstore_db_pool_connections', 'plantstore_webhook_backlog_deliveries',
    'plantstore_webhook_delivery_attempts_total',
    'plantstore_sandbox_tenants', 'process_resident_memory_bytes']) {
    assert.ok(named.has(name), `a panel shows ${name}`)
  }
})

// A real server on PostgreSQL with a sandbox (so the pool and tenant series exist too), after some traffic.
if (TEST_DATABASE_URL !== undefined) {
  test('every series the dashboard and the alert rules query is one a real server ' +
    'exports', { timeout: 60_000 }, async (t) => {
    const cleanup = cleanupStack(t)
    const server = await startServer(cleanup, {
      env: { DATABASE_URL: sandboxSchemaUrl(cleanup).url, SANDBOX: '1', API_TOKENS: undefined, METRICS_PORT: '0' }
    })
    const json = { ...AUTH_A, 'content-type': 'application/json' }
    assert.equal(
      (await fetch(`${server.baseUrl}/plants`, { method: 'POST', headers: json, body: '{"name":"Fern"}' })).status, 201)
    assert.equal((await fetch(`${server.baseUrl}/plants`, { headers: AUTH_A })).status, 200)
    assert.equal((await fetch(`${server.baseUrl}/plants/999`, { headers: AUTH_A })).status, 404)
    assert.equal((await fetch(`${server.baseUrl}/health/ready`)).status, 200)
    const res = await fetch(String(bannerLine(server.stdout())?.metrics))
    assert.equal(res.status, 200)
    const series = exported(await res.text())

    const missing = queries().flatMap(({ where, expr }) =>
      metricNames(expr).filter((name) => !series.has(name)).map((name) => `${where}: ${name}`))
    assert.deepEqual(missing, [])
    // `up` is Prometheus's own, of every target.
    const unknown = alertingRules().flatMap(({ alert, expr }) =>
      metricNames(expr).filter((name) => name !== 'up' && !series.has(name)).map((name) => `${alert}: ${name}`))
    assert.deepEqual(unknown, [])
  })
}
