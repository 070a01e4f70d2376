import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Operation } from '../../src/contract/operation.ts'
import { OPERATIONS } from '../../src/contract/operations.ts'
import { CAPABILITIES } from '../../src/contract/pricing.ts'
import { requestIdentity, tickerNormaliser } from '../../src/contract/request-identity.ts'
import * as fc from '../helpers/fc.ts'

/**
 * One request, one price: equivalent spellings of a request have one identity (the response
 * cache key and the paid-request record are built from it), different meanings never share one.
 */
const op = (id: string): Operation => {
  const o = OPERATIONS.find((x) => x.id === id)
  if (!o) throw new Error(`no operation ${id}`)
  return o
}
const AS_OF = '2024-06-28'
const ticker = fc.stringMatching(/^[A-Z]{1,5}$/)
/** A spelling of a ticker: padded with blanks, any letter case. */
const spelling = (t: string) =>
  fc
    .tuple(fc.array(fc.boolean(), { minLength: t.length, maxLength: t.length }), fc.nat(2), fc.nat(2))
    .map(([lower, l, r]) => {
      const cased = [...t].map((c, i) => (lower[i] ? c.toLowerCase() : c)).join('')
      return `${' '.repeat(l)}${cased}${' '.repeat(r)}`
    })

/** Normalises as the server's preValidation hook does, then identifies. */
function identity(o: Operation, req: { params?: unknown; query?: unknown; body?: unknown }): string {
  const copy = structuredClone(req)
  const n = tickerNormaliser(o)
  n?.('params', copy.params)
  n?.('querystring', copy.query)
  n?.('body', copy.body)
  return requestIdentity(o, copy, AS_OF)
}

describe('request identity', () => {
  test('every metered operation with tickers in its request has a ticker normaliser', () => {
    for (const c of CAPABILITIES) {
      const o = OPERATIONS.find((x) => x.id === c.operationId)
      if (!o) continue
      const carries = /"(ticker|tickers|sector_filter)"/.test(
        JSON.stringify([o.params, o.querystring, o.body]),
      )
      assert.equal(tickerNormaliser(o) !== null, carries, o.id)
    }
  })

  test('a ticker spelled any way (case, blanks) in a path, query, body or position is one request', () => {
    fc.assert(
      fc.property(
        ticker.chain((t) => fc.tuple(fc.constant(t), spelling(t), spelling(t))),
        ([t, a, b]) => {
          const cases: [string, (x: string) => { params?: unknown; query?: unknown; body?: unknown }][] = [
            ['getMetrics', (x) => ({ params: { ticker: x } })],
            ['getLstar', (x) => ({ query: { ticker: x, years: 1, threshold: 0.01 } })],
            ['decompose', (x) => ({ body: { ticker: x } })],
            ['batchLstar', (x) => ({ body: { tickers: [x, 'ZZ'], years: 1, threshold: 0.01 } })],
            ['getEtfFactorReturns', (x) => ({ query: { tickers: `${x},xlk` } })],
            [
              'snapshot',
              (x) => ({
                body: { type: 'portfolio', portfolio: [{ ticker: x, weight: 1 }], lookback_days: 252 },
              }),
            ],
          ]
          for (const [id, make] of cases) {
            assert.equal(identity(op(id), make(a)), identity(op(id), make(b)), id)
            assert.equal(identity(op(id), make(a)), identity(op(id), make(t)), id)
          }
        },
      ),
      { numRuns: 200 },
    )
  })

  test('a missing teo is the data’s last day; format is not part of the meaning', () => {
    const o = op('getIndustryPanel')
    const q = { level: 'sector', min_peers: 5 }
    assert.equal(identity(o, { query: q }), identity(o, { query: { ...q, teo: AS_OF } }))
    assert.equal(identity(o, { query: q }), identity(o, { query: { ...q, format: 'csv' } }))
    assert.notEqual(identity(o, { query: q }), identity(o, { query: { ...q, teo: '2024-06-27' } }))
  })

  test('as_of is part of the meaning: missing = the data’s last day, another day another request', () => {
    for (const id of ['decompose', 'decomposeV4', 'snapshot']) {
      const o = op(id)
      const b = id === 'snapshot' ? { type: 'ticker', ticker: 'AAPL' } : { ticker: 'AAPL' }
      assert.equal(identity(o, { body: b }), identity(o, { body: { ...b, as_of: AS_OF } }), id)
      assert.notEqual(identity(o, { body: b }), identity(o, { body: { ...b, as_of: '2024-06-27' } }), id)
    }
    // A position's proxy ETF is a ticker too: any spelling is one request.
    const snap = op('snapshot')
    const book = (proxy: string) => ({
      body: { type: 'portfolio', portfolio: [{ ticker: 'NEWCO', weight: 1, proxy }] },
    })
    assert.equal(identity(snap, book(' xlk')), identity(snap, book('XLK')))
    assert.notEqual(identity(snap, book('XLK')), identity(snap, book('XLF')))
    const m = op('getMetrics')
    const params = { ticker: 'AAPL' }
    assert.equal(identity(m, { params, query: {} }), identity(m, { params, query: { as_of: AS_OF } }))
    assert.notEqual(
      identity(m, { params, query: {} }),
      identity(m, { params, query: { as_of: '2020-01-02' } }),
    )
  })

  test('a default spelled out is the request without it (service defaults included: the screen)', () => {
    const screen = op('rankingsScreen')
    const metric = fc.constantFrom('mkt_cap', 'gross_return', 'er_l3')
    const cohort = fc.constantFrom('universe', 'sector', 'subsector')
    const window = fc.constantFrom('1d', '21d', '63d', '252d')
    fc.assert(
      fc.property(metric, fc.option(cohort), fc.option(window), (m, c, w) => {
        const spelled = { metric: m, cohort: c ?? 'universe', window: w ?? '21d' }
        const left = { metric: m, ...(c === null ? {} : { cohort: c }), ...(w === null ? {} : { window: w }) }
        assert.equal(identity(screen, { body: left }), identity(screen, { body: spelled }))
        // Another cohort or window is another request.
        const other = { ...spelled, cohort: spelled.cohort === 'sector' ? 'universe' : 'sector' }
        assert.notEqual(identity(screen, { body: left }), identity(screen, { body: other }))
        const otherWindow = { ...spelled, window: spelled.window === '1d' ? '252d' : '1d' }
        assert.notEqual(identity(screen, { body: left }), identity(screen, { body: otherWindow }))
      }),
      { numRuns: 100 },
    )
    // Query defaults too, without a validator having filled them (years=1, threshold=0.01).
    const lstar = op('getLstar')
    assert.equal(
      identity(lstar, { query: { ticker: 'AAPL' } }),
      identity(lstar, { query: { ticker: 'AAPL', years: 1, threshold: 0.01 } }),
    )
  })

  test('snapshot positions in any order are one request; duplicates are kept', () => {
    const o = op('snapshot')
    fc.assert(
      fc.property(
        fc.uniqueArray(ticker, { minLength: 1, maxLength: 8 }).chain((ts) =>
          fc.tuple(
            fc.constant(ts.map((t, i) => ({ ticker: t, weight: i + 1 }))),
            fc.shuffledSubarray(
              ts.map((t, i) => ({ ticker: t, weight: i + 1 })),
              {
                minLength: ts.length,
                maxLength: ts.length,
              },
            ),
          ),
        ),
        ([a, b]) => {
          const body = (p: unknown) => ({ body: { type: 'portfolio', portfolio: p, lookback_days: 252 } })
          assert.equal(identity(o, body(a)), identity(o, body(b)))
          assert.notEqual(identity(o, body(a)), identity(o, body([...a, a[0]])))
        },
      ),
      { numRuns: 100 },
    )
  })

  test('different parameter values or tickers never share an identity', () => {
    const o = op('getLstar')
    const query = fc.record({
      ticker,
      years: fc.integer({ min: 1, max: 15 }),
      threshold: fc.double({ min: 0, max: 0.5, noNaN: true }),
    })
    fc.assert(
      fc.property(query, query, (a, b) => {
        const same = a.ticker === b.ticker && a.years === b.years && Object.is(a.threshold, b.threshold)
        assert.equal(identity(o, { query: a }) === identity(o, { query: b }), same)
      }),
      { numRuns: 300 },
    )
    const batch = op('batchAnalyze')
    fc.assert(
      fc.property(fc.uniqueArray(ticker, { minLength: 1, maxLength: 5 }), ticker, (ts, extra) => {
        const a = identity(batch, { body: { tickers: ts, years: 1 } })
        const b = identity(batch, { body: { tickers: [...ts, extra], years: 1 } })
        assert.notEqual(a, b)
      }),
      { numRuns: 100 },
    )
    // The same parameters on another operation are another request.
    assert.notEqual(
      identity(op('getReturns'), { query: { ticker: 'AAPL', years: 1 } }),
      identity(op('getTickerReturns'), { query: { ticker: 'AAPL', years: 1 } }),
    )
  })
})
