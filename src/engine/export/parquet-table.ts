import { ParquetStreamWriter, type StreamColumn, type StreamColumnType } from '../parquet/stream.ts'
import type { TableBlock } from './csv-table.ts'

/**
 * Streams a flat table to Parquet, one row group per block: `date` as DATE, `ticker` and text
 * columns as UTF8, integer columns as INT64 and the rest as DOUBLE, all nullable except date.
 */
export class ParquetTableWriter {
  private writer: Promise<ParquetStreamWriter>
  private readonly types: StreamColumnType[]

  constructor(
    path: string,
    private readonly columns: string[],
    kinds: { integers: ReadonlySet<string>; texts: ReadonlySet<string> },
  ) {
    this.types = columns.map((c) =>
      kinds.texts.has(c) ? 'STRING' : kinds.integers.has(c) ? 'INT64' : 'DOUBLE',
    )
    const schema = [
      { name: 'date', type: 'DATE' as const },
      { name: 'ticker', type: 'STRING' as const },
      ...columns.map((name, k) => ({ name, type: this.types[k] })),
    ]
    this.writer = ParquetStreamWriter.open(path, schema, { writer: 'erm3 export' })
  }

  async write(b: TableBlock): Promise<void> {
    const cols: StreamColumn[] = [
      { name: 'date', type: 'DATE', values: b.date },
      { name: 'ticker', type: 'STRING', values: b.ticker },
    ]
    this.columns.forEach((name, k) => {
      const type = this.types[k]
      if (type === 'STRING') cols.push({ name, type, values: b.texts.get(name) ?? [] })
      else if (type === 'INT64' || type === 'DOUBLE') {
        cols.push({
          name,
          type,
          values: b.numbers.get(name) ?? new Float64Array(b.date.length).fill(Number.NaN),
        })
      }
    })
    await (await this.writer).writeRowGroup(cols)
  }

  async close(): Promise<void> {
    await (await this.writer).close()
  }
}
