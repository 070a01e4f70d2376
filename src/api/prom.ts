import { Counter, collectDefaultMetrics, Gauge, type Metric, Registry } from 'prom-client'
import type { SharedRepresentations } from '../services/billing/shared-representations.ts'

const DURATION = 'erm3_http_request_duration_seconds'
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5]

/** One operation's request times: counts per bucket (the last is above every bound), sum, count. */
interface Timings {
  counts: Float64Array
  sum: number
  count: number
}

/**
 * Operator metrics (Prometheus text format at /metrics-prom). Labels are operation ids, never
 * tickers or keys.
 *
 * Every request records its operation, status and time, so recording is a few additions into
 * plain maps: prom-client hashes a series' labels on every call (about a microsecond a request
 * between the counter and the histogram). The counts reach prom-client when it is scraped (the
 * counters' `collect`), and the request-time histogram is a metric of its own that the registry
 * formats like prom-client's histograms (the same lines, labels and order).
 */
export function createPromMetrics(sources: { shared?: () => SharedRepresentations } = {}) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  if (sources.shared) sharedAnswerMetrics(registry, sources.shared)
  /** operation → status → requests not yet added to the counter. */
  const unreported = new Map<string, Map<number, number>>()
  const requests = new Counter({
    name: 'erm3_http_requests_total',
    help: 'HTTP requests by operation and status',
    labelNames: ['operation', 'status'] as const,
    registers: [registry],
    collect() {
      for (const [operation, byStatus] of unreported)
        for (const [status, n] of byStatus) {
          if (n > 0) this.inc({ operation, status: String(status) }, n)
          byStatus.set(status, 0)
        }
    },
  })
  const timings = new Map<string, Timings>()
  registry.registerMetric(durationMetric(timings) as unknown as Metric)
  return {
    registry,
    observe(operation: string, status: number, seconds: number) {
      let byStatus = unreported.get(operation)
      if (!byStatus) {
        byStatus = new Map()
        unreported.set(operation, byStatus)
      }
      const n = byStatus.get(status)
      if (n === undefined) {
        // A new series is listed from its first request on, as prom-client lists them.
        requests.inc({ operation, status: String(status) }, 0)
        byStatus.set(status, 1)
      } else byStatus.set(status, n + 1)
      let t = timings.get(operation)
      if (!t) {
        t = { counts: new Float64Array(DURATION_BUCKETS.length + 1), sum: 0, count: 0 }
        timings.set(operation, t)
      }
      let b = 0
      while (b < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[b]) b++
      ;(t.counts as Float64Array)[b] = (t.counts as Float64Array)[b] + 1
      t.sum += seconds
      t.count++
    },
  }
}

/**
 * The request-time histogram as the registry reads a metric: cumulative `_bucket` lines (`le`
 * then `operation`), `+Inf`, `_sum` and `_count` per operation, as prom-client's Histogram has them.
 */
function durationMetric(timings: Map<string, Timings>) {
  const help = 'Server time per request by operation'
  return {
    name: DURATION,
    help,
    type: 'histogram',
    aggregator: 'sum',
    async get() {
      const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = []
      for (const [operation, t] of timings) {
        let acc = 0
        DURATION_BUCKETS.forEach((le, i) => {
          acc += t.counts[i]
          values.push({ metricName: `${DURATION}_bucket`, labels: { le, operation }, value: acc })
        })
        values.push(
          { metricName: `${DURATION}_bucket`, labels: { le: '+Inf', operation }, value: t.count },
          { metricName: `${DURATION}_sum`, labels: { operation }, value: t.sum },
          { metricName: `${DURATION}_count`, labels: { operation }, value: t.count },
        )
      }
      return { name: DURATION, help, type: 'histogram', values, aggregator: 'sum' }
    },
    reset() {
      timings.clear()
    },
  }
}

export type PromMetrics = ReturnType<typeof createPromMetrics>

/** The encoded answers shared across accounts (services/billing/shared-representations.ts). */
function sharedAnswerMetrics(registry: Registry, shared: () => SharedRepresentations): void {
  new Gauge({
    name: 'erm3_shared_answers_bytes',
    help: 'Bytes held by the encoded answers shared across accounts (bodies and keys)',
    registers: [registry],
    collect() {
      this.set(shared().size)
    },
  })
  new Gauge({
    name: 'erm3_shared_answers',
    help: 'Encoded answers shared across accounts, held now',
    registers: [registry],
    collect() {
      this.set(shared().count)
    },
  })
  let reported = { hits: 0, misses: 0 }
  new Counter({
    name: 'erm3_shared_answer_lookups_total',
    help: 'Metered calls that looked for a shared encoded answer, by whether one was held (hit) or the answer was computed (miss)',
    labelNames: ['result'] as const,
    registers: [registry],
    collect() {
      const t = shared()
      this.inc({ result: 'hit' }, t.hits - reported.hits)
      this.inc({ result: 'miss' }, t.misses - reported.misses)
      reported = { hits: t.hits, misses: t.misses }
    },
  })
}

/**
 * What the listener's edge refuses (edge.ts) and the free-key cap (routes/auth.ts), counted for
 * the operator's alerts. Registered beside the request metrics of the same registry.
 */
export function createEdgeMetrics(registry: Registry) {
  const connections = new Counter({
    name: 'erm3_connections_refused_total',
    help: 'Connections closed at once because their client address had ERM3_MAX_CONNECTIONS_PER_ADDRESS open',
    registers: [registry],
  })
  const freeKeys = new Counter({
    name: 'erm3_free_provision_cap_refusals_total',
    help: 'POST /auth/provision-free requests refused because the day’s ERM3_FREE_PROVISION_DAILY_CAP was reached',
    registers: [registry],
  })
  return {
    connectionRefused: () => connections.inc(),
    freeProvisionRefused: () => freeKeys.inc(),
  }
}

export type EdgeMetrics = ReturnType<typeof createEdgeMetrics>
