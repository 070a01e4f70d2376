/**
 * A small market for the update tests: the synthetic generator's 20 stocks (its smallest market), SPY and the ETFs they
 * need over ~300 sessions, served by an in-memory price vendor (a plain `Source`), and a data
 * directory holding all but the vendor's last days.
 */
import { mkdir, readdir, readFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import type { Dataset, SecurityRow } from '../../src/engine/data/format.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import type { DailyBar, Source } from '../../src/engine/sources/types.ts'
import { DATA_DIR_FILES, readBars, writeBars, writeFileAtomically } from '../../src/engine/update/data-dir.ts'
import { csvDocument } from '../../src/platform/csv.ts'
import { isoFromDay, parseIsoDay } from '../../src/platform/dates.ts'
import { sha256Hex } from '../../src/platform/digest.ts'

export interface Market {
  ds: Dataset
  /** ISO sessions of the whole market. */
  days: string[]
  /** symbol → its latest window (what the vendor keys it by). */
  latest: Map<string, SecurityRow>
}

/** 2016-07-04 is a holiday: the market ends Wed 2016-07-06, so its last sessions are 07-01, 07-05, 07-06. */
export async function makeMarket(dir: string): Promise<Market> {
  const out = join(dir, 'synth')
  await synthesizeDataset(out, {
    seed: 7,
    stocks: 20,
    start: '2015-04-20',
    end: '2016-07-06',
    fundamentals: false,
  })
  const { dataset: ds } = await readDataset(out)
  const latest = new Map<string, SecurityRow>()
  for (const r of ds.securities) {
    const k = latest.get(r.symbol)
    if (!k || r.validFrom > k.validFrom) latest.set(r.symbol, r)
  }
  return { ds, days: Array.from(ds.calendar, isoFromDay), latest }
}

/** The vendor's bar of symbol index i on session t (no actions: close = adjusted close). */
export function vendorBar(m: Market, i: number, t: number): DailyBar | null {
  const adj = m.ds.prices.adj_close[i][t]
  if (Number.isNaN(adj)) return null
  const v = m.ds.prices.volume?.[i][t] ?? Number.NaN
  // The vendor's scale (3×) is not the stored one (makeDataDir): only ratios carry over.
  return {
    date: m.days[t],
    close: 3 * adj,
    adjClose: 3 * adj,
    volume: Number.isNaN(v) ? null : v,
    splitFactor: 1,
    dividend: 0,
  }
}

export interface FakeVendor {
  source: Source
  calls: { day: string[]; history: string[] }
  /** Replace the bars the vendor serves for a ticker (whole history, oldest first). */
  override: Map<string, DailyBar[]>
  /** When set, every call fails as a vendor down after retries would. */
  down: boolean
}

/** An in-memory vendor with a bulk day endpoint and per-ticker history, serving `m`. */
export function fakeVendor(m: Market): FakeVendor {
  const calls = { day: [] as string[], history: [] as string[] }
  const override = new Map<string, DailyBar[]>()
  const f: FakeVendor = { source: { name: 'tiingo' }, calls, override, down: false }
  const barsOf = (i: number): DailyBar[] => {
    const ticker = (m.latest.get(m.ds.symbols[i]) as SecurityRow).ticker
    const o = override.get(ticker)
    if (o) return o
    return m.days.map((_, t) => vendorBar(m, i, t)).filter((b): b is DailyBar => b !== null)
  }
  const tickerOf = (i: number) => (m.latest.get(m.ds.symbols[i]) as SecurityRow).ticker
  f.source.prices = {
    async history(ticker, from, to) {
      calls.history.push(ticker)
      if (f.down) throw new Error('tiingo: 503 Service Unavailable after 4 attempts')
      const i = m.ds.symbols.findIndex((_, k) => tickerOf(k) === ticker)
      return i < 0 ? [] : barsOf(i).filter((b) => b.date >= from && (to === null || b.date <= to))
    },
    async day(date) {
      calls.day.push(date)
      if (f.down) throw new Error('tiingo: 503 Service Unavailable after 4 attempts')
      const out = new Map<string, DailyBar>()
      m.ds.symbols.forEach((_, i) => {
        const b = barsOf(i).find((x) => x.date === date)
        // A bulk endpoint gives unadjusted prices: adjClose = close.
        if (b) out.set(tickerOf(i), { ...b, adjClose: b.close })
      })
      return out
    },
  }
  return f
}

/** A data directory holding the market's sessions through `through` (inclusive). */
export async function makeDataDir(m: Market, dataDir: string, through: string): Promise<void> {
  await mkdir(dataDir, { recursive: true })
  const rows = [...m.ds.securities].sort(
    (a, b) => a.symbol.localeCompare(b.symbol) || a.validFrom.localeCompare(b.validFrom),
  )
  await writeFileAtomically(
    join(dataDir, DATA_DIR_FILES.securities),
    csvDocument(
      ['symbol', 'ticker', 'name', 'asset_type', 'exchange', 'cik', 'permanent_id', 'valid_from', 'valid_to'],
      rows.map((r) => [r.symbol, r.ticker, r.name, r.assetType, '', r.cik, null, r.validFrom, r.validTo]),
    ),
  )
  const T = m.days.indexOf(through) + 1
  for (const [i, symbol] of m.ds.symbols.entries()) {
    const bars: DailyBar[] = []
    for (let t = 0; t < T; t++) {
      const b = vendorBar(m, i, t)
      if (b) bars.push({ ...b, adjClose: m.ds.prices.adj_close[i][t] })
    }
    await writeBars(dataDir, symbol, bars)
  }
}

/**
 * Stands in for the data directory → dataset assembly: the market's securities and factor
 * registry, the calendar of SPY's bars and the price panels of the stored bars.
 */
export function assembler(m: Market): (dataDir: string) => Promise<void> {
  return async (dataDir) => {
    const spy = await readBars(dataDir, 'SPY')
    const calendar = Int32Array.from(spy, (b) => parseIsoDay(b.date) ?? 0)
    const T = calendar.length
    const index = new Map(spy.map((b, t) => [b.date, t]))
    const adj: Float64Array[] = []
    const close: Float64Array[] = []
    const volume: Float64Array[] = []
    for (const symbol of m.ds.symbols) {
      const [a, c, v] = [0, 1, 2].map(() => new Float64Array(T).fill(Number.NaN))
      for (const b of await readBars(dataDir, symbol)) {
        const t = index.get(b.date)
        if (t === undefined) continue
        a[t] = b.adjClose
        c[t] = b.close
        v[t] = b.volume ?? Number.NaN
      }
      adj.push(a)
      close.push(c)
      volume.push(v)
    }
    const series = m.ds.series
      ? { ...m.ds.series, values: m.ds.series.values.map((s) => s.slice(0, T)) }
      : null
    const ds: Dataset = {
      ...m.ds,
      calendar,
      prices: { adj_close: adj, close, volume, shares_out: null },
      series,
      fundamentals: [],
      truth: null,
      report: null,
    }
    await writeDataset(ds, join(dataDir, DATA_DIR_FILES.dataset))
  }
}

/** path → sha256 of every file under `root`. */
export async function digests(root: string): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) await walk(p)
      else out.set(relative(root, p), sha256Hex(await readFile(p)))
    }
  }
  await walk(root)
  return out
}
