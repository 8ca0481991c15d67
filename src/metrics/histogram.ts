import type { Metric, Registry } from 'prom-client'

class HistogramSeries {
  /** counts[i]: observations in (bounds[i-1], bounds[i]]; the last slot holds those above every bound. */
  readonly counts: Float64Array
  sum = 0
  count = 0

  constructor (readonly labels: Readonly<Record<string, string | number>>, private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1)
  }

  observe (value: number): void {
    let bucket = 0
    while (bucket < this.bounds.length && value > (this.bounds[bucket] as number)) bucket++
    this.counts[bucket] = (this.counts[bucket] as number) + 1
    this.sum += value
    this.count++
  }
}

interface Sample {
  value: number
  labels: Record<string, string | number>
  metricName: string
}

/**
 * A Prometheus histogram for the per-request paths, read by prom-client's registry: an observation
 * is a bucket search and two additions, labels are handled at scrape time only, where prom-client
 * handles them per observation (see docs/performance.md#what-the-measurements-decided).
 */
export class RequestHistogram {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  readonly #series = new Map<string, HistogramSeries>()

  constructor (
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: Registry
  ) {
    // The registry calls get() (and reset()) only: this is a metric to it, though not one of its classes.
    registry.registerMetric(this as unknown as Metric)
  }

  /** `key` names the labels uniquely. */
  series (key: string, labels: Readonly<Record<string, string | number>>): HistogramSeries {
    let series = this.#series.get(key)
    if (series === undefined) {
      series = new HistogramSeries(labels, this.bounds)
      this.#series.set(key, series)
    }
    return series
  }

  async get (): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: Sample[] }> {
    const values: Sample[] = []
    for (const series of this.#series.values()) {
      let cumulative = 0
      for (let bucket = 0; bucket <= this.bounds.length; bucket++) {
        cumulative += series.counts[bucket] as number
        values.push({
          value: cumulative,
          labels: { le: this.bounds[bucket] ?? '+Inf', ...series.labels },
          metricName: `${this.name}_bucket`
        })
      }
      values.push({ value: series.sum, labels: { ...series.labels }, metricName: `${this.name}_sum` })
      values.push({ value: series.count, labels: { ...series.labels }, metricName: `${this.name}_count` })
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }

  reset (): void {
    this.#series.clear()
  }
}
