import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import type { Writable } from 'node:stream'
import { createGzip } from 'node:zlib'
import { csvCell, csvLine, csvTextCell } from '../../platform/csv.ts'
import { isoFromDay } from '../../platform/dates.ts'

/** A block of rows of a flat table: a date column, text columns and numeric columns (NaN = null). */
export interface TableBlock {
  date: Int32Array
  ticker: string[]
  numbers: Map<string, Float64Array>
  texts: Map<string, (string | null)[]>
}

/**
 * Streams a flat table to CSV (RFC 4180: header row, comma, CRLF, quotes where needed, UTF-8),
 * gzip-compressed when the path ends in `.gz`. Nulls are empty cells; numbers are written in
 * shortest round-trip form, so they read back bit for bit; a text cell a spreadsheet would take
 * for a formula gets a leading `'` (csvTextCell).
 */
export class CsvTableWriter {
  private readonly file: Writable
  private readonly out: Writable
  private pending = ''

  constructor(
    path: string,
    private readonly columns: string[],
  ) {
    this.file = createWriteStream(path)
    if (path.endsWith('.gz')) {
      const gz = createGzip({ level: 6 })
      gz.pipe(this.file)
      this.out = gz
    } else this.out = this.file
    this.pending = csvLine(['date', 'ticker', ...columns])
  }

  async write(b: TableBlock): Promise<void> {
    const cols = this.columns.map((c): ((r: number) => string) => {
      const numbers = b.numbers.get(c)
      if (numbers) return (r) => csvCell(numbers[r])
      const texts = b.texts.get(c) ?? []
      return (r) => csvTextCell(texts[r])
    })
    const parts: string[] = [this.pending]
    this.pending = ''
    for (let r = 0; r < b.date.length; r++) {
      let line = `${isoFromDay(b.date[r])},${csvTextCell(b.ticker[r])}`
      for (const cell of cols) line += `,${cell(r)}`
      parts.push(line, '\r\n')
    }
    if (!this.out.write(parts.join(''))) await once(this.out, 'drain')
  }

  async close(): Promise<void> {
    if (this.pending) this.out.write(this.pending)
    this.out.end()
    await once(this.file, 'close')
  }
}
