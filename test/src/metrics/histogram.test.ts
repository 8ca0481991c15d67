import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Registry } from 'prom-client'
import { RequestHistogram } from '../../../src/metrics/histogram.js'

test('RequestHistogram: le buckets are cumulative and inclusive, each series keeps its labels, and prom-client ' +
  'prints it as a histogram', async () => {
  const registry = new Registry()
  const histogram = new RequestHistogram('demo_seconds', 'A demo', [0.1, 1], registry)
  const fast = histogram.series('GET 200', { method: 'GET', status_code: 200 })
  assert.equal(histogram.series('GET 200', { method: 'GET', status_code: 200 }), fast, 'one series per key')
  for (const value of [0.05, 0.1, 0.5, 1, 7]) fast.observe(value)
  histogram.series('POST 201', { method: 'POST', status_code: 201 }).observe(0.2)

  assert.equal(await registry.metrics(), [
    '# HELP demo_seconds A demo',
    '# TYPE demo_seconds histogram',
    'demo_seconds_bucket{le="0.1",method="GET",status_code="200"} 2',
    'demo_seconds_bucket{le="1",method="GET",status_code="200"} 4',
    'demo_seconds_bucket{le="+Inf",method="GET",status_code="200"} 5',
    'demo_seconds_sum{method="GET",status_code="200"} 8.65',
    'demo_seconds_count{method="GET",status_code="200"} 5',
    'demo_seconds_bucket{le="0.1",method="POST",status_code="201"} 0',
    'demo_seconds_bucket{le="1",method="POST",status_code="201"} 1',
    'demo_seconds_bucket{le="+Inf",method="POST",status_code="201"} 1',
    'demo_seconds_sum{method="POST",status_code="201"} 0.2',
    'demo_seconds_count{method="POST",status_code="201"} 1',
    ''
  ].join('\n'))

  registry.resetMetrics()
  assert.equal(await registry.metrics(), '# HELP demo_seconds A demo\n# TYPE demo_seconds histogram\n')
})
