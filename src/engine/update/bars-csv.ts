/**
 * The text of a data directory's bar file, `bars/<SYMBOL>.csv`: read for every security on
 * every update, so it is scanned by character code rather than split into line and cell arrays
 * (the split version spent most of an update's read stage allocating strings).
 */
import { csvDocument, csvLine } from '../../platform/csv.ts'
import { InputError } from '../../platform/errors.ts'
import type { DailyBar } from '../sources/types.ts'

const BAR_HEADER = ['date', 'close', 'adj_close', 'volume', 'split_factor', 'dividend'] as const

const barCells = (b: DailyBar) => [b.date, b.close, b.adjClose, b.volume, b.splitFactor, b.dividend]

/** Number cells are written in full precision (shortest round-trip form). */
export function barsCsv(bars: readonly DailyBar[]): string {
  return csvDocument(BAR_HEADER, bars.map(barCells))
}

/** The data lines of `bars`, as `barsCsv` writes them, without the header. */
export function barLines(bars: readonly DailyBar[]): string {
  let s = ''
  for (const b of bars) s += csvLine(barCells(b))
  return s
}

const COMMA = 44
const MINUS = 45
const DOT = 46
const ZERO = 48
/** Integers up to here are exact doubles. */
const EXACT_INT = 2 ** 53
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k)

const isSpace = (c: number) => c === 32 || c === 9 || c === 13 || c === 0xfeff || c === 0xa0

/**
 * The number in text[a, b): `Number` of that slice, with a fast path for plain decimals of at
 * most 15 digits and 22 decimals, where integer ÷ 10^k is one correctly rounded division of two
 * exact doubles, hence the same double `Number` gives. Anything else goes to `Number`. An empty
 * cell is NaN.
 */
function numberAt(text: string, a: number, b: number): number {
  if (a === b) return Number.NaN
  let i = a
  const neg = text.charCodeAt(i) === MINUS
  if (neg) i++
  let m = 0
  let decimals = -1
  let digits = 0
  for (; i < b; i++) {
    const c = text.charCodeAt(i)
    if (c === DOT && decimals < 0) decimals = 0
    else if (c >= ZERO && c <= ZERO + 9) {
      m = m * 10 + (c - ZERO)
      digits++
      if (decimals >= 0) decimals++
    } else return Number(text.slice(a, b))
  }
  if (digits === 0 || m >= EXACT_INT || digits > 15 || decimals > 22) return Number(text.slice(a, b))
  const v = decimals > 0 ? m / POW10[decimals] : m
  return neg ? -v : v
}

const isDigit = (c: number) => c >= ZERO && c <= ZERO + 9

/** text[a, a + 10) has the shape YYYY-MM-DD. */
function isDateShape(text: string, a: number): boolean {
  for (let k = 0; k < 10; k++) {
    const c = text.charCodeAt(a + k)
    if (k === 4 || k === 7 ? c !== MINUS : !isDigit(c)) return false
  }
  return true
}

/**
 * The bars of a bar file. Lines are trimmed and blank ones skipped; the first must be the
 * header. A last line without its line end is ignored: it is what a crash part-way through
 * appending a day leaves, and the update that re-runs appends that day again.
 */
export function parseBarsCsv(text: string, file: string): DailyBar[] {
  return parseBarLines(text, file, false)
}

/**
 * The bars of the end of a bar file that starts at a line start (`text` need not hold the
 * header; one it holds is skipped). Errors name the file but no line: the count starts mid-file.
 */
export function parseBarsTail(text: string, file: string): DailyBar[] {
  return parseBarLines(text, file, true)
}

function parseBarLines(text: string, file: string, tail: boolean): DailyBar[] {
  const out: DailyBar[] = []
  const cuts = new Int32Array(6)
  let header = tail
  let lineNo = 0
  for (let start = 0; start < text.length; ) {
    const nl = text.indexOf('\n', start)
    if (nl < 0) break
    lineNo++
    let a = start
    let b = nl
    start = nl + 1
    while (a < b && isSpace(text.charCodeAt(a))) a++
    while (b > a && isSpace(text.charCodeAt(b - 1))) b--
    if (a === b) continue
    if (tail && out.length === 0 && text.startsWith(BAR_HEADER.join(','), a)) continue
    if (!header) {
      if (text.slice(a, b) !== BAR_HEADER.join(','))
        throw new InputError({ file }, `expected the header ${BAR_HEADER.join(',')}`)
      header = true
      continue
    }
    out.push(barAt(text, a, b, cuts, file, tail ? undefined : lineNo))
  }
  if (!header) throw new InputError({ file }, `expected the header ${BAR_HEADER.join(',')}`)
  return out
}

/**
 * The bar of the trimmed line text[a, b); `cuts` is scratch space: cuts[k] is where cell k ends,
 * and a missing cell is empty at the line's end. No closures here: this runs once per bar.
 */
function barAt(
  text: string,
  a: number,
  b: number,
  cuts: Int32Array,
  file: string,
  line: number | undefined,
): DailyBar {
  let k = 0
  for (let i = a; i < b && k < 6; i++) if (text.charCodeAt(i) === COMMA) cuts[k++] = i
  for (let j = k; j < 6; j++) cuts[j] = b
  const c1 = cuts[0] + 1
  const c2 = cuts[1] + 1
  const c3 = Math.min(cuts[2] + 1, b)
  const c4 = Math.min(cuts[3] + 1, b)
  const c5 = Math.min(cuts[4] + 1, b)
  const bar: DailyBar = {
    date: text.slice(a, cuts[0]),
    close: c1 >= cuts[1] ? Number.NaN : numberAt(text, c1, cuts[1]),
    adjClose: c2 >= cuts[2] ? Number.NaN : numberAt(text, c2, cuts[2]),
    volume: c3 >= cuts[3] ? null : numberAt(text, c3, cuts[3]),
    splitFactor: numberAt(text, c4, cuts[4]),
    dividend: numberAt(text, c5, cuts[5]),
  }
  if (cuts[0] - a !== 10 || !isDateShape(text, a) || !(bar.adjClose > 0) || Number.isNaN(bar.close))
    throw new InputError({ file, line }, `unreadable bar: ${text.slice(a, Math.min(b, a + 120))}`)
  return bar
}
