import * as fc from '../helpers/fc.ts'

/**
 * fast-check generators for the importer's property tests: small random wide price CSVs, and
 * single defects to inject into them (with the line the importer must report).
 */

/** Distinct canonical tickers; BRK-B checks that the dash spelling is unified to BRK.B. */
const POOL = ['AAA', 'BRK-B', 'XLK', 'ZZ9', 'Q']
const price = fc.double({ min: 1e-4, max: 1e7, noNaN: true, noDefaultInfinity: true })
const DAY0 = Date.UTC(2000, 0, 3) / 86_400_000

export interface Table {
  tickers: string[]
  rows: { day: number; spy: number; others: (number | null)[] }[]
  dateStyle: 'iso' | 'compact' | 'slash' | 'us' | 'isotime'
  eol: '\n' | '\r\n'
}

export const tableArb: fc.Arbitrary<Table> = fc.integer({ min: 0, max: 3 }).chain((k) =>
  fc
    .record({
      tickers: fc.shuffledSubarray(POOL, { minLength: k, maxLength: k }),
      start: fc.integer({ min: 0, max: 9000 }),
      rows: fc.array(
        fc.record({
          step: fc.integer({ min: 1, max: 4 }),
          spy: price,
          others: fc.array(fc.option(price, { nil: null, freq: 4 }), { minLength: k, maxLength: k }),
        }),
        { minLength: 2, maxLength: 12 },
      ),
      dateStyle: fc.constantFrom('iso', 'compact', 'slash', 'us', 'isotime') as fc.Arbitrary<
        Table['dateStyle']
      >,
      eol: fc.constantFrom('\n', '\r\n') as fc.Arbitrary<Table['eol']>,
    })
    .map(({ tickers, start, rows, dateStyle, eol }) => {
      let day = DAY0 + start
      const out = rows.map((r) => {
        day += r.step
        return { day, spy: r.spy, others: [...r.others] }
      })
      // Every ticker column has at least one price (an all-empty column is left out by design).
      tickers.forEach((_, c) => {
        if (out.every((r) => r.others[c] === null)) out[0].others[c] = out[0].spy
      })
      return { tickers, rows: out, dateStyle, eol }
    }),
)

function formatDay(day: number, style: Table['dateStyle']): string {
  const iso = new Date(day * 86_400_000).toISOString().slice(0, 10)
  const [y, m, d] = iso.split('-')
  if (style === 'compact') return `${y}${m}${d}`
  if (style === 'slash') return `${y}/${m}/${d}`
  if (style === 'us') return `${m}/${d}/${y}`
  if (style === 'isotime') return `${iso} 00:00:00+00:00`
  return iso
}

/** The table as CSV lines: cells[0] is the header. */
export function cellsOf(t: Table): string[][] {
  return [
    ['date', 'SPY', ...t.tickers],
    ...t.rows.map((r) => [
      formatDay(r.day, t.dateStyle),
      String(r.spy),
      ...r.others.map((v) => (v === null ? '' : String(v))),
    ]),
  ]
}

export const render = (cells: string[][], eol: string) => cells.map((c) => c.join(',')).join(eol) + eol

export type DefectKind =
  | 'bad_number'
  | 'non_positive'
  | 'duplicate_date'
  | 'bad_date'
  | 'missing_column'
  | 'ragged_row'
export const defectArb = fc.record({
  kind: fc.constantFrom<DefectKind>(
    'bad_number',
    'non_positive',
    'duplicate_date',
    'bad_date',
    'missing_column',
    'ragged_row',
  ),
  row: fc.nat(),
  col: fc.nat(),
  badNumber: fc.constantFrom('abc', '1.2.3', '--5', '1e', 'Infinity', '0x'),
  nonPositive: fc.constantFrom('0', '-1.5', '-0', '-1e-300'),
  badDate: fc.constantFrom('2019-02-30', '13/45/2019', 'yesterday', '', '2019-1-2x'),
  longer: fc.boolean(),
})

/** Injects one defect; returns the cells and the line the error must point at. */
export function inject(t: Table, d: DefectSpec): { cells: string[][]; line: number } {
  const cells = cellsOf(t)
  const n = t.rows.length
  if (d.kind === 'missing_column') {
    cells[0][0] = 'when'
    return { cells, line: 1 }
  }
  const r = d.kind === 'duplicate_date' ? 1 + (d.row % (n - 1)) : d.row % n
  const row = cells[r + 1]
  const col = 1 + (d.col % (row.length - 1))
  if (d.kind === 'bad_number') row[col] = d.badNumber
  if (d.kind === 'non_positive') row[col] = d.nonPositive
  if (d.kind === 'bad_date') row[0] = d.badDate
  if (d.kind === 'duplicate_date') row[0] = cells[r][0]
  if (d.kind === 'ragged_row') {
    if (d.longer) row.push('1')
    else row.pop()
  }
  return { cells, line: r + 2 }
}

export interface DefectSpec {
  kind: DefectKind
  row: number
  col: number
  badNumber: string
  nonPositive: string
  badDate: string
  longer: boolean
}
