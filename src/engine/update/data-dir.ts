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
import { appendFile, mkdir, open, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { InputError } from '../../platform/errors.ts'
import type { DailyBar } from '../sources/types.ts'
import { barLines, barsCsv, parseBarsCsv, parseBarsTail } from './bars-csv.ts'

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

export async function readBars(dataDir: string, symbol: string): Promise<DailyBar[]> {
  const file = join(dataDir, DATA_DIR_FILES.bars(symbol))
  const text = await readOptional(file)
  return text === null ? [] : parseBarsCsv(text, file)
}

/**
 * The last bars of a symbol's file: at least every bar dated on or after `from` and the one
 * before them (unless the file starts later), read backwards from the end, `bytes` first and
 * four times more each time that was not enough; `complete` when that reached the start of the
 * file (its every bar). A missing file has none.
 */
export async function readBarsTail(
  dataDir: string,
  symbol: string,
  from: string,
  bytes: number,
): Promise<{ bars: DailyBar[]; complete: boolean }> {
  const file = join(dataDir, DATA_DIR_FILES.bars(symbol))
  let fh: Awaited<ReturnType<typeof open>>
  try {
    fh = await open(file, 'r')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { bars: [], complete: true }
    throw e
  }
  try {
    const { size } = await fh.stat()
    for (let want = bytes; ; want *= 4) {
      const at = Math.max(0, size - want)
      const buf = Buffer.alloc(size - at)
      const { bytesRead } = await fh.read(buf, 0, buf.length, at)
      const text = buf.toString('utf8', 0, bytesRead)
      if (at === 0) return { bars: parseBarsCsv(text, file), complete: true }
      // Everything after the first line end starts at a line start.
      const bars = parseBarsTail(text.slice(text.indexOf('\n') + 1), file)
      if (bars.length > 1 && bars[0].date < from) return { bars, complete: false }
    }
  } finally {
    await fh.close()
  }
}

export async function writeBars(dataDir: string, symbol: string, bars: readonly DailyBar[]): Promise<void> {
  await writeFileAtomically(join(dataDir, DATA_DIR_FILES.bars(symbol)), barsCsv(bars))
}

/** The file ends with a line end (false when it is missing or empty). */
async function endsWithLineEnd(file: string): Promise<boolean> {
  let fh: Awaited<ReturnType<typeof open>>
  try {
    fh = await open(file, 'r')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw e
  }
  try {
    const { size } = await fh.stat()
    if (size === 0) return false
    const last = Buffer.alloc(1)
    await fh.read(last, 0, 1, size - 1)
    return last[0] === 0x0a
  } finally {
    await fh.close()
  }
}

/**
 * Stores `bars`, the new history of a symbol whose file held `stored` when read (`partial`:
 * `stored` was only the file's last bars, and `bars` continues them). When `stored` is its
 * unchanged beginning (the same bar objects: an update's plain append), only the new lines are
 * appended (`appended`); otherwise (a restated history, a file without its last line end) the
 * file is rewritten atomically (`rewritten`). Appending is not atomic: a crash can leave a torn
 * last line, which the reader ignores and the re-run's update rewrites. A hard-linked copy of a
 * data directory shares its bar files, so it must copy `bars/` for real.
 */
export async function extendBars(
  dataDir: string,
  symbol: string,
  stored: readonly DailyBar[],
  bars: readonly DailyBar[],
  partial = false,
): Promise<'appended' | 'rewritten'> {
  const file = join(dataDir, DATA_DIR_FILES.bars(symbol))
  const unchanged = stored.length > 0 && stored.length <= bars.length && stored.every((b, i) => b === bars[i])
  if (unchanged && (await endsWithLineEnd(file))) {
    if (bars.length > stored.length) await appendFile(file, barLines(bars.slice(stored.length)))
    return 'appended'
  }
  if (partial && !unchanged) throw new Error(`bars of ${symbol}: a restated history must be a whole one`)
  // A torn last line under a tail: the whole file, its last complete line, then the new bars.
  const whole = partial ? [...(await readBars(dataDir, symbol)), ...bars.slice(stored.length)] : bars
  await writeBars(dataDir, symbol, whole)
  return 'rewritten'
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
