/**
 * The data directory: what `erm3 data fetch` downloads and `erm3 update` extends, kept per
 * security so that a resumed backfill or a one-stock re-download rewrites one small file. The
 * canonical dataset the build reads (`dataset/`) is assembled from it and replaced atomically.
 * docs/data-sources.md §"The data directory" describes the layout for operators.
 *
 *   bars/<SYMBOL>.csv         date,close,adj_close,volume,split_factor,dividend (oldest first)
 *   securities.csv            the identity registry: one row per ticker window of a symbol
 *   classification.csv        symbol,sector,industry,source,industry_etf,industry_source
 *   shares/CIK##########.csv  end,filed,shares
 *   facts/CIK##########.json.gz  SEC company facts
 *   submissions/CIK##########.json  the filer's SEC header, trimmed: name, SIC, former names
 *   rates.csv                 date,tbill_3m
 *   holdings/<ETF>.csv        ticker,weight,as_of
 *   state.json                the fetch state (which tasks are done, through which date)
 *   dataset/                  the canonical dataset (docs/data-format.md)
 *   reports/                  one JSON report per update run
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { csvDocument } from '../../platform/csv.ts'
import { InputError } from '../../platform/errors.ts'
import type { DailyBar } from '../sources/types.ts'

const cikName = (cik: number) => `CIK${String(cik).padStart(10, '0')}`

export const DATA_DIR_FILES = {
  bars: (symbol: string) => `bars/${symbol}.csv`,
  securities: 'securities.csv',
  classification: 'classification.csv',
  shares: (cik: number) => `shares/${cikName(cik)}.csv`,
  facts: (cik: number) => `facts/${cikName(cik)}.json.gz`,
  submissions: (cik: number) => `submissions/${cikName(cik)}.json`,
  rates: 'rates.csv',
  holdings: (etf: string) => `holdings/${etf}.csv`,
  state: 'state.json',
  dataset: 'dataset',
  reports: 'reports',
  lock: 'update.lock',
} as const

/** Writes `data` next to `path` and renames it into place: readers never see half a file. */
export async function writeFileAtomically(path: string, data: string | Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true })
  const tmp = `${path}.${process.pid}.${Date.now().toString(36)}.tmp`
  await writeFile(tmp, data)
  await rename(tmp, path)
}

/** A file's text, or null when it does not exist. */
export async function readOptional(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw e
  }
}

const BAR_HEADER = ['date', 'close', 'adj_close', 'volume', 'split_factor', 'dividend'] as const

/** Number cells are written in full precision (shortest round-trip form). */
function barsCsv(bars: readonly DailyBar[]): string {
  return csvDocument(
    BAR_HEADER,
    bars.map((b) => [b.date, b.close, b.adjClose, b.volume, b.splitFactor, b.dividend]),
  )
}

function parseBarsCsv(text: string, file: string): DailyBar[] {
  const lines = text.split('\n').filter((l) => l.trim() !== '')
  if (lines.length === 0 || lines[0].trim() !== BAR_HEADER.join(','))
    throw new InputError({ file }, `expected the header ${BAR_HEADER.join(',')}`)
  const out: DailyBar[] = []
  for (let i = 1; i < lines.length; i++) {
    const c = lines[i].trim().split(',')
    const num = (s: string | undefined) => (s === undefined || s === '' ? Number.NaN : Number(s))
    const bar: DailyBar = {
      date: c[0],
      close: num(c[1]),
      adjClose: num(c[2]),
      volume: c[3] === '' || c[3] === undefined ? null : Number(c[3]),
      splitFactor: num(c[4]),
      dividend: num(c[5]),
    }
    if (!/^\d{4}-\d{2}-\d{2}$/.test(bar.date) || !(bar.adjClose > 0) || Number.isNaN(bar.close))
      throw new InputError({ file, line: i + 1 }, `unreadable bar: ${lines[i].slice(0, 120)}`)
    out.push(bar)
  }
  return out
}

export async function readBars(dataDir: string, symbol: string): Promise<DailyBar[]> {
  const file = join(dataDir, DATA_DIR_FILES.bars(symbol))
  const text = await readOptional(file)
  return text === null ? [] : parseBarsCsv(text, file)
}

export async function writeBars(dataDir: string, symbol: string, bars: readonly DailyBar[]): Promise<void> {
  await writeFileAtomically(join(dataDir, DATA_DIR_FILES.bars(symbol)), barsCsv(bars))
}

/** The fetch state: task key (`tiingo:prices:AAPL`, `sec:facts:320193`) → when and through which date. */
export interface FetchState {
  version: 1
  tasks: Record<string, { done_at: string; through: string | null }>
}

export async function readFetchState(dataDir: string): Promise<FetchState> {
  const text = await readOptional(join(dataDir, DATA_DIR_FILES.state))
  if (text === null) return { version: 1, tasks: {} }
  const s = JSON.parse(text) as FetchState
  if (s.version !== 1 || typeof s.tasks !== 'object' || s.tasks === null)
    throw new InputError({ file: join(dataDir, DATA_DIR_FILES.state) }, 'not an erm3 fetch state (version 1)')
  return s
}

export async function writeFetchState(dataDir: string, state: FetchState): Promise<void> {
  await writeFileAtomically(join(dataDir, DATA_DIR_FILES.state), `${JSON.stringify(state, null, 1)}\n`)
}
