import { basename } from 'node:path'
import { AppError, InputError } from '../../../platform/errors.ts'
import type { Progress } from '../../../platform/progress.ts'
import type { QualityFinding, Rates } from '../format.ts'
import {
  type Cell,
  DATE_COLUMN_NAMES,
  DistinctDates,
  findColumn,
  requireColumn,
  requireDate,
  requireNumber,
} from './cells.ts'
import { readTable, type TableSink } from './table-reader.ts'
import { tenorFromFileName, tenorFromName, tenorMonths } from './tenors.ts'

type RateUnit = 'percent' | 'fraction'

/** One `--rates` argument: `path`, `path=TENOR`, `path=TENOR:unit` or `path=:unit`. */
export interface RateSpec {
  path: string
  tenor: string | null
  unit: RateUnit | null
}

const SUFFIX_RE = /^([A-Za-z0-9]*)(?::(percent|fraction))?$/i

export function parseRateSpec(spec: string): RateSpec {
  const eq = spec.lastIndexOf('=')
  const suffix = eq >= 0 ? spec.slice(eq + 1) : ''
  const m = eq >= 0 ? SUFFIX_RE.exec(suffix) : null
  // A path may itself contain '='; only a well-formed suffix is taken as TENOR[:unit].
  if (!m || suffix === '') return { path: spec, tenor: null, unit: null }
  const path = spec.slice(0, eq)
  let tenor: string | null = null
  if (m[1] !== '') {
    tenor = tenorFromName(m[1])
    if (tenor === null) {
      throw new AppError(
        'INVALID_REQUEST',
        `--rates ${spec}: "${m[1]}" is not a tenor (use e.g. 1m, 3m, 6m, 1y, 10y)`,
      )
    }
  }
  const unit = m[2] ? (m[2].toLowerCase() as RateUnit) : null
  return { path, tenor, unit }
}

/** One rates file as read: per tenor column, values on the file's dates (NaN = empty). */
interface RateFile {
  spec: RateSpec
  tenors: string[]
  days: number[]
  values: number[][]
}

/**
 * A rates table: a date column plus one column per tenor (a FRED series, a Treasury curve), or a
 * Yahoo-style table whose `Close` column is the rate. Tenors come from the `=TENOR` suffix,
 * the column names or the file name, in that order.
 */
class RatesSink implements TableSink {
  private dateIdx = -1
  private names: string[] = []
  private valueCols: number[] = []
  private readonly seen: DistinctDates
  readonly out: RateFile

  constructor(spec: RateSpec) {
    this.out = { spec, tenors: [], days: [], values: [] }
    this.seen = new DistinctDates(spec.path)
  }

  header(names: string[]): void {
    const file = this.out.spec.path
    this.names = names
    this.dateIdx = requireColumn(file, names, DATE_COLUMN_NAMES)
    const close = findColumn(names, ['close'])
    this.valueCols = close >= 0 ? [close] : names.map((_, i) => i).filter((i) => i !== this.dateIdx)
    this.out.tenors = this.valueCols.map((i) => this.tenorOf(i))
    const dup = this.out.tenors.findIndex((t, k) => this.out.tenors.indexOf(t) !== k)
    if (dup >= 0) {
      throw new InputError(
        { file, line: 1, column: names[this.valueCols[dup]] },
        `tenor ${this.out.tenors[dup]} given by two columns`,
      )
    }
    this.out.values = this.valueCols.map(() => [])
  }

  private tenorOf(index: number): string {
    const { path, tenor } = this.out.spec
    const name = this.names[index]
    const single = this.valueCols.length === 1
    if (tenor !== null) {
      if (single) return tenor
      throw new InputError(
        { file: path, line: 1, column: name },
        `=${tenor} names one tenor but the file has ${this.valueCols.length} rate columns`,
      )
    }
    const t = tenorFromName(name) ?? (single ? tenorFromFileName(path) : null)
    if (t === null) {
      throw new InputError(
        { file: path, line: 1, column: name },
        `cannot tell the tenor of column "${name}"; give it as --rates ${path}=TENOR (e.g. =3m)`,
      )
    }
    return t
  }

  row(cells: Cell[], line: number): void {
    const file = this.out.spec.path
    const day = requireDate(file, cells[this.dateIdx], line, this.names[this.dateIdx])
    this.seen.add(day, line, this.names[this.dateIdx])
    this.out.days.push(day)
    this.valueCols.forEach((index, k) => {
      this.out.values[k].push(requireNumber(file, cells[index], line, this.names[index]))
    })
  }
}

/**
 * Reads every rates file, converts to fractions and merges them: when two files give the same
 * tenor and date, the earlier file on the command line wins (a user lists the preferred source
 * first), and the overlap is reported.
 */
export async function readRates(
  specs: readonly RateSpec[],
  findings: QualityFinding[],
  progress: Progress,
): Promise<Rates> {
  const files: RateFile[] = []
  for (const spec of specs) {
    const sink = new RatesSink(spec)
    await readTable(spec.path, sink, progress, `rates ${basename(spec.path)}`)
    toFractions(sink.out, findings)
    files.push(sink.out)
  }
  return mergeRates(files, findings)
}

/** Percent or fraction: as the spec says, else any |value| > 1.5 means percent (no rate is 150 %). */
function toFractions(f: RateFile, findings: QualityFinding[]): void {
  let maxAbs = 0
  for (const col of f.values) for (const v of col) if (Math.abs(v) > maxAbs) maxAbs = Math.abs(v)
  const unit: RateUnit = f.spec.unit ?? (maxAbs > 1.5 ? 'percent' : 'fraction')
  const why = f.spec.unit
    ? 'as given on the command line'
    : `detected: largest |value| ${maxAbs} ${unit === 'percent' ? '>' : '<='} 1.5`
  findings.push({
    kind: 'note',
    detail: `rates ${basename(f.spec.path)} (${f.tenors.join(', ')}): values read as ${unit} (${why}); stored as fractions`,
  })
  if (unit === 'percent')
    for (const col of f.values) for (let i = 0; i < col.length; i++) col[i] = col[i] / 100
}

function mergeRates(files: readonly RateFile[], findings: QualityFinding[]): Rates {
  const tenors = [...new Set(files.flatMap((f) => f.tenors))].sort((a, b) => tenorMonths(a) - tenorMonths(b))
  const daySet = new Set<number>()
  for (const f of files) {
    f.days.forEach((d, i) => {
      if (f.values.some((col) => !Number.isNaN(col[i]))) daySet.add(d)
    })
  }
  const days = Int32Array.from(daySet).sort()
  const index = new Map<number, number>()
  for (const [i, d] of days.entries()) index.set(d, i)
  const values = tenors.map(() => new Float64Array(days.length).fill(Number.NaN))
  const sourceOf = tenors.map(() => new Map<string, number>())
  for (const f of files) {
    f.tenors.forEach((tenor, k) => {
      const t = tenors.indexOf(tenor)
      const overlap = fillTenor(values[t], f.days, f.values[k], index)
      if (overlap > 0) {
        findings.push({
          kind: 'note',
          detail: `rates: ${basename(f.spec.path)} gives ${tenor} on ${overlap} date(s) already given by ${[...sourceOf[t].keys()].join(', ')}; kept the earlier file's values`,
        })
      }
      sourceOf[t].set(basename(f.spec.path), overlap)
    })
  }
  return { tenors, days, values }
}

/** Writes one file's column into the merged column, keeping values already there; returns the overlap count. */
function fillTenor(
  dst: Float64Array,
  days: readonly number[],
  src: readonly number[],
  index: ReadonlyMap<number, number>,
): number {
  let overlap = 0
  for (let i = 0; i < days.length; i++) {
    if (Number.isNaN(src[i])) continue
    const j = index.get(days[i])
    if (j === undefined) continue
    if (Number.isNaN(dst[j])) dst[j] = src[i]
    else overlap++
  }
  return overlap
}
