import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { DailyBar, PriceCapability } from '../../src/engine/sources/types.ts'
import { appendByClose, reconcileSecurity, scaleMismatch } from '../../src/engine/update/reconcile.ts'

const dates = ['2024-03-11', '2024-03-12', '2024-03-13', '2024-03-14', '2024-03-15']
const bar = (date: string, close: number, adjClose = close, o: Partial<DailyBar> = {}): DailyBar => ({
  date,
  close,
  adjClose,
  volume: 1000,
  splitFactor: 1,
  dividend: 0,
  ...o,
})
/** Stored history: the first four days on the stored scale. */
const storedAdj = [50, 51, 49.5, 52]
const stored = dates.slice(0, 4).map((d, i) => bar(d, storedAdj[i] * 2, storedAdj[i]))

function vendor(history: DailyBar[]): PriceCapability & { calls: string[] } {
  const calls: string[] = []
  return {
    calls,
    async history(ticker, from, to) {
      calls.push(`${ticker} ${from} ${to}`)
      return history.filter((b) => b.date >= from && (to === null || b.date <= to))
    },
  }
}

describe('reconciliation', () => {
  test('appendByClose carries the close-to-close return onto the stored scale', () => {
    const b = appendByClose(stored[3], bar(dates[4], 106, 106))
    assert.equal(b.adjClose, (52 * 106) / 104)
    assert.equal(b.close, 106)
  })

  test('scaleMismatch: a constant factor within tolerance is the same history', () => {
    const k = 1.2345
    const v = stored.map((b) => ({ ...b, adjClose: b.adjClose * k }))
    assert.equal(scaleMismatch(stored, v, 1e-6), null)
    v[2] = { ...v[2], adjClose: v[2].adjClose * (1 + 1e-5) }
    assert.match(scaleMismatch(stored, v, 1e-6) ?? '', /2024-03-13/)
    assert.equal(scaleMismatch(stored, v, 1e-4), null)
    assert.match(scaleMismatch(stored, v.slice(1), 1e-6) ?? '', /no bar for 2024-03-11/)
  })

  test('a dividend: history kept, the new day appended with the vendor adjusted return', async () => {
    // The vendor rescaled everything by 0.97 after the dividend; its new day's return is 0.5 %.
    const k = 0.97
    const history = [
      ...stored.map((b) => ({ ...b, adjClose: b.adjClose * k })),
      bar(dates[4], 103.5, 52 * k * 1.005),
    ]
    const p = vendor(history)
    const fresh = bar(dates[4], 103.5, 103.5, { dividend: 1.2 })
    const r = await reconcileSecurity({ symbol: 'ABC', ticker: 'ABC' }, stored, [fresh], [], p, 1e-6)
    assert.deepEqual(p.calls, ['ABC 2024-03-11 2024-03-15'])
    assert.deepEqual(r.bars.slice(0, 4), stored)
    assert.ok(Math.abs(r.bars[4].adjClose / 52 - 1.005) < 1e-12)
    assert.equal(r.bars[4].dividend, 1.2)
    assert.deepEqual(
      r.findings.map((f) => [f.kind, f.action]),
      [['corporate_action', 'info']],
    )
  })

  test('a real restatement replaces the history with the vendor one', async () => {
    const history = [
      bar(dates[0], 100, 40),
      bar(dates[1], 102, 41),
      bar(dates[2], 99, 42),
      bar(dates[3], 104, 43),
      bar(dates[4], 52, 44, { splitFactor: 2 }),
    ]
    const fresh = bar(dates[4], 52, 52, { splitFactor: 2 })
    const r = await reconcileSecurity(
      { symbol: 'ABC', ticker: 'ABC' },
      stored,
      [fresh],
      [],
      vendor(history),
      1e-6,
    )
    assert.deepEqual(r.bars, history)
    assert.deepEqual(
      r.findings.map((f) => [f.kind, f.action]),
      [
        ['corporate_action', 'info'],
        ['restated', 'kept'],
      ],
    )
  })

  test('an action from the actions source alone is reported too', async () => {
    const history = [...stored, bar(dates[4], 106, 53)]
    const fresh = bar(dates[4], 106, 106)
    const action = { ticker: 'ABC', date: dates[4], kind: 'dividend' as const, value: 0.5 }
    const r = await reconcileSecurity(
      { symbol: 'ABC', ticker: 'ABC' },
      stored,
      [fresh],
      [action],
      vendor(history),
      1e-6,
    )
    assert.equal(r.bars[4].adjClose, 53)
    assert.match(r.findings[0].detail, /dividend 0.5/)
  })

  test("a new day the vendor's history lacks is dropped and reported", async () => {
    const fresh = bar(dates[4], 106, 106, { dividend: 1 })
    const r = await reconcileSecurity(
      { symbol: 'ABC', ticker: 'ABC' },
      stored,
      [fresh],
      [],
      vendor(stored),
      1e-6,
    )
    assert.deepEqual(r.bars, stored)
    assert.ok(r.findings.some((f) => f.kind === 'missing' && f.action === 'dropped'))
  })
})
