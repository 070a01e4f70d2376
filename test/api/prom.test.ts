/**
 * The operator metrics (src/api/prom.ts) record requests in plain maps and hand them to
 * prom-client when scraped. The exposition must be what prom-client's own Counter and Histogram
 * print for the same requests: the reference below is built here from prom-client itself (same
 * names, labels and buckets), fed the same requests, and scraped at the same moments.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Counter, Histogram, Registry } from 'prom-client'
import { createPromMetrics } from '../../src/api/prom.ts'
import * as fc from '../helpers/fc.ts'

function reference() {
  const registry = new Registry()
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
  return {
    registry,
    observe(operation: string, status: number, seconds: number) {
      requests.inc({ operation, status: String(status) })
      duration.observe({ operation }, seconds)
    },
  }
}

/** erm3's own metrics of an exposition (the process and runtime defaults vary between scrapes). */
const own = (text: string) =>
  text
    .split('\n\n')
    .filter((block) => block.includes('# HELP erm3_'))
    .join('\n\n')

const step = fc.oneof(
  fc.record({
    kind: fc.constant('request' as const),
    operation: fc.constantFrom('getBalance', 'getMetrics', 'unmatched', 'getHealth'),
    status: fc.constantFrom(200, 304, 402, 429, 503),
    // Bucket bounds themselves, values between them, zero and beyond the last bound.
    seconds: fc.oneof(
      fc.constantFrom(0, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 5.000001),
      fc.double({ min: 0, max: 20, noNaN: true }),
    ),
  }),
  fc.constant({ kind: 'scrape' as const }),
)

describe('operator metrics (prom.ts)', () => {
  it('print what prom-client’s Counter and Histogram print for the same requests, at every scrape', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
        const ours = createPromMetrics()
        const ref = reference()
        for (const s of [...steps, { kind: 'scrape' as const }]) {
          if (s.kind === 'request') {
            ours.observe(s.operation, s.status, s.seconds)
            ref.observe(s.operation, s.status, s.seconds)
          } else {
            assert.equal(own(await ours.registry.metrics()), own(await ref.registry.metrics()))
          }
        }
      }),
      { numRuns: 100 },
    )
  })

  it('an unscraped process still counts every request (a scrape after many shows them all)', async () => {
    const ours = createPromMetrics()
    for (let i = 0; i < 10_000; i++) ours.observe('getBalance', 200, 0.0001)
    const text = await ours.registry.metrics()
    assert.match(text, /^erm3_http_requests_total\{operation="getBalance",status="200"\} 10000$/m)
    assert.match(
      text,
      /^erm3_http_request_duration_seconds_bucket\{le="0.0005",operation="getBalance"\} 10000$/m,
    )
    assert.match(text, /^erm3_http_request_duration_seconds_count\{operation="getBalance"\} 10000$/m)
    // Counted once: a second scrape shows the same totals.
    assert.match(
      await ours.registry.metrics(),
      /^erm3_http_requests_total\{operation="getBalance",status="200"\} 10000$/m,
    )
  })
})
