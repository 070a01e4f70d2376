import { basename } from 'node:path'
import type { Progress } from '../../platform/progress.ts'
import type { PriceField } from '../format.ts'
import type { Cell } from './cells.ts'
import { isLongHeader, LongPriceSink } from './prices-long.ts'
import { WidePriceSink } from './prices-wide.ts'
import type { RawSeries } from './raw-series.ts'
import { readTable, type TableSink } from './table-reader.ts'

export interface PriceFileResult {
  series: RawSeries[]
  /** Price fields the file has columns for (even if every cell is empty). */
  fields: PriceField[]
  layout: 'wide' | 'long'
}

/** Picks the wide or long reading from the header: a `ticker`/`symbol` column means long. */
class PriceTableSink implements TableSink {
  private inner: WidePriceSink | LongPriceSink | null = null
  constructor(private readonly file: string) {}

  header(names: string[]): void {
    this.inner = isLongHeader(names) ? new LongPriceSink(this.file) : new WidePriceSink(this.file)
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

export async function readPriceFile(file: string, progress: Progress): Promise<PriceFileResult> {
  const sink = new PriceTableSink(file)
  await readTable(file, sink, progress, `prices ${basename(file)}`)
  return sink.result()
}
