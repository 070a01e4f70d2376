/**
 * A small market for the update tests: the synthetic generator's 20 stocks (its smallest market), SPY and the ETFs they
 * need over ~300 sessions, served by an in-memory price vendor (a plain `Source`), and a data
 * directory holding all but the vendor's last days (identity, classification, rates and bars).
 */
import { mkdir, readdir, readFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import type { Dataset, SecurityRow } from '../../src/engine/data/format.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import type { DailyBar, Source } from '../../src/engine/sources/types.ts'
import { writeBars } from '../../src/engine/update/data-dir.ts'
import { writeClassification, writeRates } from '../../src/engine/update/dir-files.ts'
import { writeIdentity } from '../../src/engine/update/identity.ts'
import { isoFromDay } from '../../src/platform/dates.ts'
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
  await writeIdentity(
    dataDir,
    m.ds.securities.map((r) => ({
      symbol: r.symbol,
      ticker: r.ticker,
      name: r.name,
      assetType: r.assetType,
      exchange: '',
      cik: r.cik,
      permanentId: null,
      validFrom: r.validFrom,
      validTo: r.validTo,
    })),
  )
  await writeClassification(
    dataDir,
    m.ds.securities
      .filter((r) => r.assetType === 'stock')
      .map((r) => ({
        symbol: r.symbol,
        sector: r.sector ?? '',
        industry: r.industry,
        source: 'test',
        industryEtf: null,
      })),
  )
  const rates = m.ds.rates
  const k = rates?.tenors.indexOf('3m') ?? -1
  if (rates && k >= 0)
    await writeRates(
      dataDir,
      Array.from(rates.days, (d, i) => ({ date: isoFromDay(d), value: rates.values[k][i] })).filter(
        (p) => !Number.isNaN(p.value),
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
