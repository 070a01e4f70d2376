import { basename } from 'node:path'
import { isoFromDay } from '../../../platform/dates.ts'
import { AppError, InputError } from '../../../platform/errors.ts'
import type { Progress } from '../../../platform/progress.ts'
import { MACRO_FACTORS } from '../etf-registry.ts'
import type { QualityFinding, Series } from '../format.ts'
import {
  type Cell,
  DATE_COLUMN_NAMES,
  DistinctDates,
  findColumn,
  normalizeName,
  requireColumn,
  requireDate,
  requireNumber,
} from './cells.ts'
import type { CalendarLookup } from './prices-align.ts'
import { seriesFindings } from './quality.ts'
import { readTable, type TableSink } from './table-reader.ts'

/** The index-level series the factor registry reads (MACRO_FACTORS of kind index): `VIX`. */
const SERIES_NAMES: readonly string[] = Object.values(MACRO_FACTORS)
  .filter((m) => m.kind === 'index')
  .map((m) => m.ticker)

/** Spellings of a series name, in a spec or a column header (FRED `VIXCLS`, Yahoo `^VIX`). */
const SERIES_ALIASES: Readonly<Record<string, string>> = { vixcls: 'VIX', '^vix': 'VIX' }

/** The series a name or column header means, or null. */
function seriesName(raw: string): string | null {
  const n = normalizeName(raw)
  return SERIES_ALIASES[n] ?? SERIES_NAMES.find((s) => normalizeName(s) === n) ?? null
}

/** One `--series` argument: `path` (the name comes from the value column) or `path=NAME`. */
export interface SeriesSpec {
  path: string
  name: string | null
}

export function parseSeriesSpec(spec: string): SeriesSpec {
  const eq = spec.lastIndexOf('=')
  const suffix = eq >= 0 ? spec.slice(eq + 1) : ''
  // A path may itself contain '='; only a name-like suffix is taken as NAME.
  if (!/^\^?[A-Za-z][A-Za-z0-9_]*$/.test(suffix)) return { path: spec, name: null }
  const name = seriesName(suffix)
  if (name === null) {
    throw new AppError(
      'INVALID_REQUEST',
      `--series ${spec}: unknown series "${suffix}" (known: ${SERIES_NAMES.join(', ')})`,
    )
  }
  return { path: spec.slice(0, eq), name }
}

/** A level file as read: its dates and values (NaN = missing, e.g. FRED's `.`). */
interface SeriesFile {
  path: string
  name: string
  days: number[]
  values: number[]
}

/**
 * A level table: a date column and one value column (a FRED download `observation_date,VIXCLS`
 * or `DATE,VIXCLS`), or a Yahoo-style table whose `Close` column is the level.
 */
class SeriesSink implements TableSink {
  private dateIdx = -1
  private valueIdx = -1
  private names: string[] = []
  private readonly dates: DistinctDates
  readonly out: SeriesFile

  constructor(private readonly spec: SeriesSpec) {
    this.dates = new DistinctDates(spec.path)
    this.out = { path: spec.path, name: '', days: [], values: [] }
  }

  header(names: string[]): void {
    const file = this.spec.path
    this.names = names
    this.dateIdx = requireColumn(file, names, DATE_COLUMN_NAMES)
    const close = findColumn(names, ['close'])
    const others = names.map((_, i) => i).filter((i) => i !== this.dateIdx)
    if (close < 0 && others.length !== 1) {
      throw new InputError(
        { file, line: 1, column: names[others[1] ?? this.dateIdx] },
        `a series file has one value column next to the date (or a Close column); found ${others.length}`,
      )
    }
    this.valueIdx = close >= 0 ? close : others[0]
    const name = this.spec.name ?? seriesName(names[this.valueIdx])
    if (name === null) {
      throw new InputError(
        { file, line: 1, column: names[this.valueIdx] },
        `cannot tell which series column "${names[this.valueIdx]}" holds; give it as --series ${file}=NAME (known: ${SERIES_NAMES.join(', ')})`,
      )
    }
    this.out.name = name
  }

  row(cells: Cell[], line: number): void {
    const file = this.spec.path
    const column = this.names[this.valueIdx]
    const day = requireDate(file, cells[this.dateIdx], line, this.names[this.dateIdx])
    this.dates.add(day, line, this.names[this.dateIdx])
    const v = requireNumber(file, cells[this.valueIdx], line, column)
    // An index level is positive; a zero is a placeholder for "missing", never a level.
    if (v <= 0) throw new InputError({ file, line, column }, `non-positive level ${v}`)
    this.out.days.push(day)
    this.out.values.push(v)
  }
}

/**
 * Reads the level files and aligns them to the calendar: a calendar day without a value is null
 * (NaN), never zero and never the previous day's level, so the factor's change is null next to
 * it. Values on other days are dropped and reported.
 */
export async function readSeries(
  specs: readonly SeriesSpec[],
  calendar: Int32Array,
  lookup: CalendarLookup,
  findings: QualityFinding[],
  progress: Progress,
): Promise<Series> {
  const out: Series = { names: [], values: [] }
  const from = new Map<string, string>()
  for (const spec of specs) {
    const sink = new SeriesSink(spec)
    await readTable(spec.path, sink, progress, `series ${basename(spec.path)}`)
    const f = sink.out
    const twice = from.get(f.name)
    if (twice !== undefined) {
      throw new AppError('INVALID_REQUEST', `series ${f.name} is given by both ${twice} and ${spec.path}`)
    }
    from.set(f.name, spec.path)
    const values = alignSeries(f, calendar, lookup, findings)
    findings.push(...seriesFindings(f.name, calendar, values))
    out.names.push(f.name)
    out.values.push(values)
  }
  return out
}

function alignSeries(
  f: SeriesFile,
  calendar: Int32Array,
  lookup: CalendarLookup,
  findings: QualityFinding[],
): Float64Array {
  const values = new Float64Array(calendar.length).fill(Number.NaN)
  const off: number[] = []
  let priced = 0
  f.days.forEach((d, i) => {
    if (Number.isNaN(f.values[i])) return
    const idx = lookup.indexOf(d)
    if (idx < 0) off.push(d)
    else {
      values[idx] = f.values[i]
      priced++
    }
  })
  const span = (days: readonly number[]) =>
    days.length ? `${isoFromDay(minOf(days))} … ${isoFromDay(maxOf(days))}` : 'no dates'
  if (priced === 0) {
    throw new InputError(
      { file: f.path },
      `${f.name}: no value on any day of the price calendar (${span([calendar[0], calendar[calendar.length - 1]])}); the file's values cover ${span(f.days.filter((_, i) => !Number.isNaN(f.values[i])))}`,
    )
  }
  if (off.length > 0) {
    findings.push({
      kind: 'dropped_rows',
      symbol: f.name,
      from: isoFromDay(minOf(off)),
      to: isoFromDay(maxOf(off)),
      detail: `series ${basename(f.path)}: ${off.length} value(s) on days outside the price calendar were dropped`,
    })
  }
  return values
}

const minOf = (xs: readonly number[]) => xs.reduce((a, b) => Math.min(a, b))
const maxOf = (xs: readonly number[]) => xs.reduce((a, b) => Math.max(a, b))
