import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { previewResult, RESULT_CAP_CHARS } from '../../src/contract/result-preview.ts'
import { summarizeResult } from '../../src/contract/result-text.ts'

/** The text and preview of answers (docs/agents.md), checked on hand-made answers. */

const day = (i: number) => new Date(Date.UTC(2020, 0, 1) + i * 86_400_000).toISOString().slice(0, 10)
const sig6 = (x: number) => String(Number(x.toPrecision(6)))

const metadata = {
  model_version: 'ERM3-L3-v3',
  data_as_of: '2026-10-30',
  dataset: { kind: 'synthetic', seed: 42 },
}

describe('summarizeResult', () => {
  test('key numbers with units, the date, the synthetic flag, cost and balance', () => {
    const body = {
      ticker: 'AAPL',
      teo: '2026-10-30',
      exposure: { market: { er: 0.4206459403979889, hr: 0.5828995737210738, hedge_etf: 'SPY' } },
      _metadata: metadata,
      _agent: { cost_usd: 0.001, cache_status: 'MISS', balance_usd: 4.998 },
    }
    const text = summarizeResult('metrics', body)
    assert.match(text, /^metrics AAPL, state of 2026-10-30, data as of 2026-10-30\./)
    assert.match(text, /SYNTHETIC.*seed 42.*not market data/)
    assert.ok(
      text.includes(`exposure.market.hr = ${sig6(0.5828995737210738)} (USD of ETF per USD 1 of stock)`),
    )
    assert.ok(text.includes(`exposure.market.er = ${sig6(0.4206459403979889)} (fraction of variance)`))
    assert.match(text, /Cost 0\.001 USD \(MISS\); balance after the call 4\.998 USD\./)
    // Small answers carry their JSON too.
    assert.ok(text.includes(`JSON: ${JSON.stringify(body)}`))
  })

  test('a series is shown newest first, with statistics over every row', () => {
    const rows = Array.from({ length: 300 }, (_, i) => ({
      date: day(i),
      returns_gross: (i % 7) / 1000 - 0.002,
    }))
    const text = summarizeResult('ticker_returns', { ticker: 'X', data: rows, _metadata: metadata })
    const shown = text.split('\n').filter((l) => /^ {2}\d{4}-\d{2}-\d{2}: /.test(l))
    assert.deepEqual(
      shown.map((l) => l.trim().slice(0, 10)),
      [299, 298, 297, 296, 295].map(day),
    )
    assert.ok(shown[0]?.includes(`returns_gross=${sig6(rows[299]?.returns_gross as number)}`))
    const values = rows.map((r) => r.returns_gross)
    const mean = values.reduce((a, b) => a + b, 0) / values.length
    assert.ok(
      text.includes(
        `returns_gross mean ${sig6(mean)}, min ${sig6(Math.min(...values))}, max ${sig6(Math.max(...values))} (300 values)`,
      ),
    )
    assert.ok(text.includes(`Series data: 300 dated rows from ${day(0)} to ${day(299)}.`))
  })

  test('the text stays under its cap however wide the answer, and still ends with the cost', () => {
    const wide = Object.fromEntries(
      Array.from({ length: 60 }, (_, c) => [`column_with_a_long_name_${c}`, c / 3]),
    )
    const series = Object.fromEntries(
      Array.from({ length: 20 }, (_, k) => [
        `s${k}`,
        Array.from({ length: 30 }, (_, i) => ({ date: day(i), ...wide })),
      ]),
    )
    const values = Object.fromEntries(Array.from({ length: 200 }, (_, k) => [`v${k}`, 'x'.repeat(400)]))
    const text = summarizeResult('wide', {
      ...series,
      ...values,
      _agent: { cost_usd: 0.02, cache_status: 'MISS', balance_usd: 1 },
    })
    assert.ok(text.length <= 28_000, `${text.length}`)
    assert.match(text, /Cost 0\.02 USD \(MISS\); balance after the call 1 USD\./)
  })

  test('a partial batch says which tickers were not answered, never "ok"', () => {
    const body = {
      succeeded: 3,
      failed: 2,
      results: {
        SPY: { status: 'ok', ticker: 'SPY' },
        XLK: { status: 'ok', ticker: 'XLK' },
        XLF: { status: 'ok', ticker: 'XLF' },
        FOO: { status: 'error', code: 'TICKER_NOT_FOUND', detail: 'x' },
        BAR: { status: 'error', code: 'TICKER_NOT_FOUND', detail: 'x' },
      },
      _metadata: metadata,
    }
    const text = summarizeResult('batch_lstar', body)
    assert.match(text, /PARTIAL: 3 of 5 tickers answered; unknown: FOO, BAR\./)
    assert.doesNotMatch(text, /: ok\b/)
  })

  test('a book with proxied positions says which, and why, so their risk is not reported as their own', () => {
    const position = (ticker: string, extra: Record<string, unknown>) => ({
      ticker,
      weight: 0.25,
      risk_basis: 'model',
      in_dataset: true,
      proxy: null,
      ...extra,
    })
    const body = {
      snapshot: {
        positions: [
          position('AAPL', {}),
          position('NEWCO', { risk_basis: 'proxy', in_dataset: false, proxy: { etf: 'SPY' } }),
          position('OLDCO', { risk_basis: 'proxy', proxy: { etf: 'XLE' } }),
        ],
        unresolved: [],
      },
      _metadata: metadata,
    }
    const text = summarizeResult('snapshot', body)
    assert.match(
      text,
      /PROXIED: NEWCO \(not in the dataset\) by SPY; OLDCO \(no model at as_of\) by XLE; their risk is the proxy's/,
    )
    assert.doesNotMatch(
      summarizeResult('snapshot', { snapshot: { positions: [position('AAPL', {})] } }),
      /PROXIED/,
    )
  })
})

describe('previewResult', () => {
  test('an answer within the cap is returned as it is', () => {
    const body = { a: 1, rows: [{ date: day(0), x: 1 }] }
    assert.deepEqual(previewResult(body), { body, preview: null })
  })

  test('any long answer fits the cap and keeps the newest rows of each series', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 50, max: 4000 }),
        fc.boolean(),
        (tickers, days, columnar) => {
          const dates = Array.from({ length: days }, (_, i) => day(i))
          const series = columnar
            ? { dates, values: dates.map((_, i) => i / 7), l1: dates.map((_, i) => i / 3) }
            : { rows: dates.map((d, i) => ({ date: d, value: i / 7, other: 'abcdefgh' })) }
          const results = Object.fromEntries(
            Array.from({ length: tickers }, (_, i) => [
              `T${i}`,
              { status: 'ok', ticker: `T${i}`, returns: series },
            ]),
          )
          const body = { succeeded: tickers, failed: 0, results, _metadata: metadata }
          const full = JSON.stringify(body).length
          const { body: shown, preview } = previewResult(body)
          const size = JSON.stringify(shown).length
          assert.ok(size <= RESULT_CAP_CHARS, `${size} > cap`)
          if (full <= RESULT_CAP_CHARS) return assert.equal(preview, null)
          assert.ok(preview)
          assert.equal(preview.full_chars, full)
          assert.equal(preview.shown_chars, size)
          // Lineage is never cut; the first ticker is always there, with the newest day.
          assert.deepEqual((shown as typeof body)._metadata, metadata)
          const first = (shown as typeof body).results.T0?.returns as unknown as Record<string, unknown[]>
          const kept = (
            columnar ? first.dates : (first.rows as { date: string }[]).map((r) => r.date)
          ) as string[]
          assert.equal(kept.at(-1), day(days - 1))
          if (columnar) assert.equal(first.values?.length, kept.length)
        },
      ),
      { numRuns: 40 },
    )
  })
})
