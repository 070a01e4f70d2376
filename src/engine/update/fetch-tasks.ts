/**
 * The tasks of a backfill, one per file of the data directory: a security's bar history, a
 * filer's shares points, company facts and submissions header, the rates, an ETF's holdings. Each writes its file atomically, so an
 * interrupted fetch leaves whole files, and names itself by a key the fetch state records.
 */
import { join } from 'node:path'
import type { CallOptions, Source } from '../sources/types.ts'
import { classificationEtfs, writeHoldings, writeSubmissions } from './classification.ts'
import { DATA_DIR_FILES, readBars, writeBars, writeFileAtomically } from './data-dir.ts'
import { writeRates, writeShares } from './dir-files.ts'
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

type Cap = 'prices' | 'shares' | 'fundamentals' | 'rates' | 'classification' | 'securities' | 'filings'

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

/** One task per ETF of the classification map: its holdings file (left as it was when unavailable). */
export function holdingsTasks(sources: readonly Source[], ctx: TaskContext): FetchTask[] {
  const src = sourceWith(sources, 'classification')
  const cap = src?.classification
  if (!src || !cap) return []
  return classificationEtfs().map((etf) => ({
    key: `${src.name}:holdings:${etf}`,
    async run(o) {
      const holdings = await cap.holdings([etf], o)
      if (holdings.length > 0) await writeHoldings(ctx.dataDir, etf, holdings)
    },
  }))
}

/** One task per CIK: the filer's submissions header (SIC code, former names), trimmed. */
export function submissionsTasks(sources: readonly Source[], ctx: TaskContext): FetchTask[] {
  const src = sourceWith(sources, 'filings')
  const cap = src?.filings
  if (!src || !cap) return []
  return stockCiks(ctx.identity).map((cik) => ({
    key: `${src.name}:submissions:${cik}`,
    async run(o) {
      const profile = await cap.submissions(cik, o)
      if (profile) await writeSubmissions(ctx.dataDir, profile)
    },
  }))
}
