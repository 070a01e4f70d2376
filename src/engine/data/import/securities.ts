import { basename } from 'node:path'
import { InputError } from '../../../platform/errors.ts'
import type { Progress } from '../../../platform/progress.ts'
import { type Cell, cellText, findColumn, requireColumn } from './cells.ts'
import { TICKER_COLUMN_NAMES, TickerCache } from './prices-long.ts'
import { readTable, type TableSink } from './table-reader.ts'

/** One constituent (stock) as the user's securities file describes it. */
export interface Constituent {
  ticker: string
  name: string
  sector: string | null
  industry: string | null
  cik: number | null
  /** Where it was given, for error messages about it. */
  line: number
  sectorColumn: string
}

const NAME_COLUMNS = ['security', 'name', 'company', 'company_name']
const SECTOR_COLUMNS = ['gics sector', 'sector', 'gics_sector']
const INDUSTRY_COLUMNS = ['gics sub-industry', 'sub_industry', 'gics_sub_industry', 'subindustry', 'industry']
const CIK_COLUMNS = ['cik']

/**
 * The constituents CSV (e.g. `Symbol,Security,GICS Sector,GICS Sub-Industry,…,CIK,…`): every
 * row is a stock. Only the symbol column is required; other columns are used when present.
 */
class SecuritiesSink implements TableSink {
  private cols = { ticker: -1, name: -1, sector: -1, industry: -1, cik: -1 }
  private names: string[] = []
  readonly rows = new Map<string, Constituent>()
  private readonly tickers: TickerCache

  constructor(private readonly file: string) {
    this.tickers = new TickerCache(file)
  }

  header(names: string[]): void {
    this.names = names
    this.cols = {
      ticker: requireColumn(this.file, names, TICKER_COLUMN_NAMES),
      name: findColumn(names, NAME_COLUMNS),
      sector: findColumn(names, SECTOR_COLUMNS),
      industry: findColumn(names, INDUSTRY_COLUMNS),
      cik: findColumn(names, CIK_COLUMNS),
    }
  }

  row(cells: Cell[], line: number): void {
    const ticker = this.tickers.resolve(cells[this.cols.ticker], line, this.names[this.cols.ticker])
    const first = this.rows.get(ticker)
    if (first) {
      throw new InputError(
        { file: this.file, line, column: this.names[this.cols.ticker] },
        `duplicate security ${ticker} (also on line ${first.line})`,
      )
    }
    this.rows.set(ticker, {
      ticker,
      name: this.text(cells, this.cols.name) ?? ticker,
      sector: this.text(cells, this.cols.sector),
      industry: this.text(cells, this.cols.industry),
      cik: this.cik(cells, line),
      line,
      sectorColumn: this.cols.sector >= 0 ? this.names[this.cols.sector] : 'sector',
    })
  }

  private text(cells: Cell[], index: number): string | null {
    if (index < 0) return null
    const s = cellText(cells[index])
    return s === '' ? null : s
  }

  private cik(cells: Cell[], line: number): number | null {
    const s = this.text(cells, this.cols.cik)
    if (s === null) return null
    const n = Number(s)
    if (!Number.isSafeInteger(n) || n <= 0) {
      throw new InputError({ file: this.file, line, column: this.names[this.cols.cik] }, `not a CIK: "${s}"`)
    }
    return n
  }
}

export async function readSecurities(file: string, progress: Progress): Promise<Map<string, Constituent>> {
  const sink = new SecuritiesSink(file)
  await readTable(file, sink, progress, `securities ${basename(file)}`)
  return sink.rows
}
