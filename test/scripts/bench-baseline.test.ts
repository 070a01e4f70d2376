import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { compareFigures, comparisonLines } from '../../bench/lib/baseline.ts'

const recorded = {
  machine: '2 × test CPU',
  recorded_at: '2026-11-29',
  commit: 'abc1234',
  stocks: 3000,
  figures: {},
}

test('a figure more than 15 % above its recorded value is a regression; at or below is not', () => {
  const cmp = compareFigures(
    { full_build_s: 34.6, peak_rss_mb: 1150, store_gb: 5 },
    { full_build_s: 30, peak_rss_mb: 1000 },
  )
  assert.deepEqual(
    cmp.map((c) => [c.name, c.regression]),
    [
      ['full_build_s', true],
      ['peak_rss_mb', false],
    ],
  )
  const lines = comparisonLines(cmp, recorded)
  assert.match(lines.find((l) => l.includes('full_build_s')) ?? '', /×1\.15 {2}REGRESSION/)
  assert.match(lines.at(-1) ?? '', /^REGRESSIONS over 15 %: full_build_s /)
  assert.equal(
    comparisonLines(compareFigures({ a: 1 }, { a: 2 }), recorded).at(-1),
    'no regression over 15 %',
  )
})

test('regression exactly when now > then × (1 + tolerance), for any positive figures', () => {
  fc.assert(
    fc.property(
      fc.double({ min: 1e-3, max: 1e6, noNaN: true }),
      fc.double({ min: 1e-3, max: 1e6, noNaN: true }),
      (now, then) => {
        const [c] = compareFigures({ x: now }, { x: then })
        assert.equal(c.regression, now / then > 1.15)
      },
    ),
  )
})
