/**
 * Numbers as people read them (pure functions, no DOM: test/web/format.test.ts runs them in Node).
 * The API answers full precision; the pages round here, and write a negative with a real minus.
 */

import type { ResponseOf } from '../contract/client.ts'

const MINUS = '\u2212'

/** `x` to `digits` decimals with a real minus sign; null for a missing value; never `−0.000`. */
export function fixed(x: number | null | undefined, digits = 3): string | null {
  if (x === null || x === undefined || !Number.isFinite(x)) return null
  const s = Math.abs(x).toFixed(digits)
  return x < 0 && Number(s) !== 0 ? `${MINUS}${s}` : s
}

/** A percentile in 0..100 (ranks), to one decimal: `83.4`. */
export function percentile(x: number | null | undefined): string | null {
  return fixed(x, 1)
}

export interface HedgeLeg {
  etf: string | null | undefined
  /** The stock's hedge ratio on the ETF (the hedge sells this many dollars of it per dollar long). */
  ratio: number | null
}

/**
 * The hedge basket per $1 long, as one signed sum: `−0.921 SPY − 0.120 XLK + 0.050 SMH`. Each ETF
 * is listed once (a level whose sector and subsector ETF are one fund holds it once, the weights
 * added), in the order first met; a leg that adds to nothing at `digits` is left out. Null when
 * no leg remains.
 */
export function hedgeBasket(legs: readonly HedgeLeg[], digits = 3): string | null {
  const weights = new Map<string, number>()
  for (const l of legs) {
    if (!l.etf || l.ratio === null || !Number.isFinite(l.ratio)) continue
    weights.set(l.etf, (weights.get(l.etf) ?? 0) - l.ratio)
  }
  const terms = [...weights].filter(([, w]) => Number(Math.abs(w).toFixed(digits)) !== 0)
  if (terms.length === 0) return null
  return terms
    .map(([etf, w], i) => {
      const size = `${Math.abs(w).toFixed(digits)} ${etf}`
      if (i === 0) return w < 0 ? `${MINUS}${size}` : size
      return `${w < 0 ? MINUS : '+'} ${size}`
    })
    .join(' ')
}

/** The long/short exposure of a snapshot (`snapshot.exposure`), fractions of the gross. */
type BookExposure = Pick<
  ResponseOf<'snapshot'>['snapshot']['exposure'],
  'long' | 'short' | 'net' | 'gross' | 'leverage' | 'long_count' | 'short_count'
>

/**
 * The exposure table's rows: long, short, net and gross as percent of the gross (a real minus),
 * with the position counts, and leverage = gross ÷ |net| as `1.60×` (a net-zero book has none).
 */
export function exposureRows(e: BookExposure): [string, string][] {
  const share = (x: number) => `${fixed(100 * x, 1)}%`
  return [
    ['Long', `${share(e.long)} (${e.long_count} position${e.long_count === 1 ? '' : 's'})`],
    ['Short', `${share(e.short)} (${e.short_count} position${e.short_count === 1 ? '' : 's'})`],
    ['Net', share(e.net)],
    ['Gross', share(e.gross)],
    [
      'Leverage (gross ÷ |net|)',
      e.leverage === null ? 'none: the book nets to zero' : `${fixed(e.leverage, 2)}×`,
    ],
  ]
}
