/**
 * The tasks of a backfill, one per file of the data directory: a security's bar history, a
 * filer's shares points and company facts, the rates. Each writes its file atomically, so an
 * interrupted fetch leaves whole files, and names itself by a key the fetch state records.
 */
import { join } from 'node:path'
import { csvDocument } from '../../platform/csv.ts'
import { MARKET_ETF, SECTOR_ETFS } from '../data/etf-registry.ts'
import type { CallOptions, EtfHolding, Source } from '../sources/types.ts'
import { DATA_DIR_FILES, readBars, writeBars, writeFileAtomically } from './data-dir.ts'
import { type Classification, writeRates, writeShares } from './dir-files.ts'
import { type IdentityRow, latestWindows } from './identity.ts'

export interface FetchTask {
  /** `tiingo:prices:AAPL`, `sec:shares:320193`, … (the fetch state's key). */
  key: string
  run(o: CallOptions): Promise<void>
}

export interface TaskContext {
  dataDir: string
  from: string
  to: string
  identity: readonly IdentityRow[]
}

type Cap = 'prices' | 'shares' | 'fundamentals' | 'rates' | 'classification' | 'securities'

/** The first of the sources that has a capability. */
export function sourceWith(sources: readonly Source[], cap: Cap): Source | undefined {
  return sources.find((s) => s[cap] !== undefined)
}

/** One history task per symbol (asked by its current ticker), merged over what the file holds. */
export function priceTasks(src: Source, ctx: TaskContext): FetchTask[] {
  const history = src.prices?.history
  if (!history) return []
  return [...latestWindows(ctx.identity).values()].map((w) => ({
    key: `${src.name}:prices:${w.symbol}`,
    async run(o) {
      const fresh = await history(w.ticker, ctx.from, ctx.to, o)
      const dates = new Set(fresh.map((b) => b.date))
      const kept = (await readBars(ctx.dataDir, w.symbol)).filter(
        (b) => !dates.has(b.date) && (b.date < ctx.from || b.date > ctx.to),
      )
      await writeBars(
        ctx.dataDir,
        w.symbol,
        [...kept, ...fresh].sort((a, b) => a.date.localeCompare(b.date)),
      )
    },
  }))
}

/** The distinct CIKs of the registry's stocks. */
function stockCiks(identity: readonly IdentityRow[]): number[] {
  const ciks = identity.flatMap((r) => (r.assetType === 'stock' && r.cik !== null ? [r.cik] : []))
  return [...new Set(ciks)].sort((a, b) => a - b)
}

export function filerTasks(sources: readonly Source[], ctx: TaskContext): FetchTask[] {
  const out: FetchTask[] = []
  const shares = sourceWith(sources, 'shares')
  const facts = sourceWith(sources, 'fundamentals')
  for (const cik of stockCiks(ctx.identity)) {
    if (shares?.shares) {
      const cap = shares.shares
      out.push({
        key: `${shares.name}:shares:${cik}`,
        run: async (o) => writeShares(ctx.dataDir, cik, await cap.shares(cik, o)),
      })
    }
    if (facts?.fundamentals) {
      const cap = facts.fundamentals
      out.push({
        key: `${facts.name}:facts:${cik}`,
        async run(o) {
          const doc = await cap.companyFacts(cik, o)
          if (doc) await writeFileAtomically(join(ctx.dataDir, DATA_DIR_FILES.facts(cik)), doc.gzipped)
        },
      })
    }
  }
  return out
}

export function rateTask(sources: readonly Source[], ctx: TaskContext): FetchTask[] {
  const src = sourceWith(sources, 'rates')
  const cap = src?.rates
  if (!src || !cap) return []
  return [
    {
      key: `${src.name}:rates`,
      run: async (o) => writeRates(ctx.dataDir, await cap.tbill3m(ctx.from, ctx.to, o)),
    },
  ]
}

/**
 * Classification from the Select Sector SPDRs' holdings (a simple rule until a richer classifier
 * is plugged in through `FetchOptions.classify`): a stock's sector is that of the sector fund
 * holding it with the largest weight. No industry: the stock's subsector falls back to its
 * sector ETF. The holdings files are kept under holdings/.
 */
export function holdingsTask(
  sources: readonly Source[],
  ctx: TaskContext,
  write: (rows: Classification[]) => Promise<void>,
): FetchTask[] {
  const src = sourceWith(sources, 'classification')
  const cap = src?.classification
  if (!src || !cap) return []
  return [
    {
      key: `${src.name}:holdings`,
      async run(o) {
        const etfs = Object.values(SECTOR_ETFS).filter((e) => e !== MARKET_ETF)
        const holdings = await cap.holdings(etfs, o)
        for (const etf of new Set(holdings.map((h) => h.etf))) await writeHoldings(ctx.dataDir, etf, holdings)
        await write(sectorsFromHoldings(holdings, ctx.identity, src.name))
      },
    },
  ]
}

async function writeHoldings(dataDir: string, etf: string, all: readonly EtfHolding[]): Promise<void> {
  const rows = all.filter((h) => h.etf === etf).map((h) => [h.ticker, h.weight, h.asOf])
  await writeFileAtomically(
    join(dataDir, DATA_DIR_FILES.holdings(etf)),
    csvDocument(['ticker', 'weight', 'as_of'], rows),
  )
}

function sectorsFromHoldings(
  holdings: readonly EtfHolding[],
  identity: readonly IdentityRow[],
  source: string,
) {
  const sectorOf = new Map(Object.entries(SECTOR_ETFS).map(([sector, etf]) => [etf, sector]))
  const best = new Map<string, { sector: string; weight: number }>()
  for (const h of holdings) {
    const sector = sectorOf.get(h.etf)
    const w = h.weight ?? 0
    const known = best.get(h.ticker)
    if (sector && (!known || w > known.weight)) best.set(h.ticker, { sector, weight: w })
  }
  const out: Classification[] = []
  for (const w of latestWindows(identity).values()) {
    const b = best.get(w.ticker)
    if (w.assetType === 'stock' && b)
      out.push({
        symbol: w.symbol,
        sector: b.sector,
        industry: null,
        source: `${source}:holdings`,
        industryEtf: null,
      })
  }
  return out
}
