import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client'

/** Operator metrics (Prometheus text format at /metrics-prom). Labels are operation ids, never tickers or keys. */
export function createPromMetrics() {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const requests = new Counter({
    name: 'erm3_http_requests_total',
    help: 'HTTP requests by operation and status',
    labelNames: ['operation', 'status'] as const,
    registers: [registry],
  })
  const duration = new Histogram({
    name: 'erm3_http_request_duration_seconds',
    help: 'Server time per request by operation',
    labelNames: ['operation'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [registry],
  })
  const fastPath = new Counter({
    name: 'erm3_balance_fast_path_total',
    help: 'GET /balance requests answered on the listener without Fastify (the rest of them are in erm3_http_requests_total too)',
    registers: [registry],
  })
  // Label lookups hash their values on every call: keep each series' child instead.
  const counters = new Map<string, Map<number, { inc(): void }>>()
  const timers = new Map<string, { observe(v: number): void }>()
  return {
    registry,
    /** One GET /balance answered by the listener's fast path (fast-balance.ts). */
    fastBalance() {
      fastPath.inc()
    },
    observe(operation: string, status: number, seconds: number) {
      let byStatus = counters.get(operation)
      if (!byStatus) {
        byStatus = new Map()
        counters.set(operation, byStatus)
      }
      let counter = byStatus.get(status)
      if (!counter) {
        counter = requests.labels(operation, String(status))
        byStatus.set(status, counter)
      }
      counter.inc()
      let timer = timers.get(operation)
      if (!timer) {
        timer = duration.labels(operation)
        timers.set(operation, timer)
      }
      timer.observe(seconds)
    },
  }
}

export type PromMetrics = ReturnType<typeof createPromMetrics>
