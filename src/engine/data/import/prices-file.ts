import { basename } from 'node:path'
import { InputError } from '../../../platform/errors.ts'
import type { Progress } from '../../../platform/progress.ts'
import type { PriceField, QualityFinding } from '../format.ts'
import type { Cell } from './cells.ts'
import type { PriceColumn, PriceSpec } from './price-spec.ts'
import { isLongHeader, LongPriceSink } from './prices-long.ts'
import { WidePriceSink } from './prices-wide.ts'
import type { RawSeries } from './raw-series.ts'
import { readTable, type TableSink } from './table-reader.ts'
import { partialFinding, partialTrailingDays } from './volume.ts'

export interface PriceFileResult {
  series: RawSeries[]
  /** Price fields the file has columns for (even if every cell is empty). */
  fields: PriceField[]
  layout: 'wide' | 'long'
}

/** Picks the wide or long reading from the header: a `ticker`/`symbol` column means long. */
class PriceTableSink implements TableSink {
  private inner: WidePriceSink | LongPriceSink | null = null
  constructor(
    private readonly file: string,
    private readonly column: PriceColumn,
  ) {}

  header(names: string[]): void {
    if (isLongHeader(names)) this.inner = new LongPriceSink(this.file, this.column)
    else if (this.column === 'close') {
      throw new InputError(
        { file: this.file, line: 1, column: names[0] },
        '=close picks the close column of a long file (ticker,date,…,close); this file is wide, and its cells are read as adjusted closes without it',
      )
    } else this.inner = new WidePriceSink(this.file)
    this.inner.header(names)
  }

  row(cells: Cell[], line: number): void {
    this.inner?.row(cells, line)
  }

  result(): PriceFileResult {
    const inner = this.inner
    if (inner === null) return { series: [], fields: [], layout: 'wide' }
    if (inner instanceof LongPriceSink)
      return { series: inner.result(), fields: inner.fields(), layout: 'long' }
    return { series: inner.result(), fields: ['adj_close'], layout: 'wide' }
  }
}

export async function readPriceFile(
  spec: PriceSpec,
  findings: QualityFinding[],
  progress: Progress,
): Promise<PriceFileResult> {
  const sink = new PriceTableSink(spec.path, spec.column)
  await readTable(spec.path, sink, progress, `prices ${basename(spec.path)}`)
  const res = sink.result()
  if (spec.column === 'close') closesOnly(spec, res, findings)
  if (spec.tickers !== null) res.series = listedOnly(spec, res.series)
  return res
}

/**
 * An OHLCV file pulled during a session ends in a day whose "close" is an intraday price: the
 * days volume.ts recognises as partial are dropped here too, then the volume (read only for
 * that test) is removed, so the file adds adjusted closes and nothing else.
 */
function closesOnly(spec: PriceSpec, res: PriceFileResult, findings: QualityFinding[]): void {
  if (res.fields.includes('volume')) {
    const partial = partialTrailingDays(res.series)
    for (const p of partial) findings.push(partialFinding(`prices ${basename(spec.path)}`, p))
    const drop = new Set(partial.map((p) => p.day))
    if (drop.size > 0) res.series = res.series.map((s) => withoutDays(s, drop))
  }
  for (const s of res.series) s.fields = { adj_close: s.fields.adj_close }
  res.fields = ['adj_close']
}

function withoutDays(s: RawSeries, drop: ReadonlySet<number>): RawSeries {
  const keep = Array.from(s.days.keys()).filter((i) => !drop.has(s.days[i]))
  const fields: RawSeries['fields'] = {}
  for (const [f, a] of Object.entries(s.fields) as [PriceField, Float64Array][])
    fields[f] = Float64Array.from(keep, (i) => a[i])
  const days = Int32Array.from(keep, (i) => s.days[i])
  return { ...s, days, lines: Int32Array.from(keep, (i) => s.lines[i]), fields }
}

function listedOnly(spec: PriceSpec, series: RawSeries[]): RawSeries[] {
  const wanted = new Set(spec.tickers)
  const kept = series.filter((s) => wanted.has(s.ticker))
  const found = new Set(kept.map((s) => s.ticker))
  const absent = [...wanted].filter((t) => !found.has(t))
  if (absent.length > 0) {
    throw new InputError(
      { file: spec.path },
      `no ${spec.column === 'close' ? 'close' : 'adjusted close'} for ${absent.join(', ')} in this file (listed after =${spec.column}:)`,
    )
  }
  return kept
}
