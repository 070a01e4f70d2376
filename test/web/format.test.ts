import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { exposureRows, fixed, hedgeBasket, percentile } from '../../src/web/format.ts'

/** The dashboard's number formatting (pure functions; the pages use them, docs/dashboard.md). */

const M = '\u2212'

describe('numbers for people', () => {
  test('fixed: rounded, a real minus, never a negative zero, null when missing', () => {
    assert.equal(fixed(0.92134567891234), '0.921')
    assert.equal(fixed(-0.92134567891234), `${M}0.921`)
    assert.equal(fixed(-0.0004), '0.000')
    assert.equal(fixed(1.23456, 2), '1.23')
    assert.equal(fixed(null), null)
    assert.equal(fixed(undefined), null)
    assert.equal(fixed(Number.NaN), null)
  })

  test('percentile: one decimal', () => {
    assert.equal(percentile(83.41234567890123), '83.4')
    assert.equal(percentile(100), '100.0')
    assert.equal(percentile(null), null)
  })

  test('hedge basket: signed terms, never "+ -", each ETF once with its weights added', () => {
    // Short 0.921 of SPY, and a negative sector ratio: long 0.3 of XLK.
    const two = hedgeBasket([
      { etf: 'SPY', ratio: 0.92134 },
      { etf: 'XLK', ratio: -0.3 },
    ])
    assert.equal(two, `${M}0.921 SPY + 0.300 XLK`)
    assert.doesNotMatch(two ?? '', /\+ [-−]|[-−] [-−]/)
    // Sector and subsector hedged with one fund: listed once, 0.25 + 0.125 (computed here).
    const same = hedgeBasket([
      { etf: 'SPY', ratio: 1.1 },
      { etf: 'XLK', ratio: 0.25 },
      { etf: 'XLK', ratio: 0.125 },
    ])
    assert.equal(same, `${M}1.100 SPY ${M} ${(0.25 + 0.125).toFixed(3)} XLK`)
    assert.equal(same?.match(/XLK/g)?.length, 1)
    // Legs that cancel, or that are missing, leave nothing to list.
    assert.equal(
      hedgeBasket([
        { etf: 'XLF', ratio: 0.2 },
        { etf: 'XLF', ratio: -0.2 },
        { etf: null, ratio: 0.5 },
        { etf: 'SPY', ratio: null },
      ]),
      null,
    )
    // A first leg that is long has no sign.
    assert.equal(hedgeBasket([{ etf: 'SPY', ratio: -0.5 }]), '0.500 SPY')
  })

  test('exposure rows: shares of the gross with a real minus, leverage as gross ÷ |net|', () => {
    // 80 long, 20 short of the gross: net 60, leverage 1 ÷ 0.6.
    const rows = exposureRows({
      long: 0.8,
      short: -0.2,
      net: 0.6,
      gross: 1,
      leverage: 1 / 0.6,
      long_count: 3,
      short_count: 1,
    })
    assert.deepEqual(rows, [
      ['Long', '80.0% (3 positions)'],
      ['Short', `${M}20.0% (1 position)`],
      ['Net', '60.0%'],
      ['Gross', '100.0%'],
      ['Leverage (gross ÷ |net|)', '1.67×'],
    ])
    const flat = exposureRows({
      long: 0.5,
      short: -0.5,
      net: 0,
      gross: 1,
      leverage: null,
      long_count: 1,
      short_count: 1,
    })
    assert.equal(flat[2]?.[1], '0.0%')
    assert.equal(flat[4]?.[1], 'none: the book nets to zero')
  })
})
