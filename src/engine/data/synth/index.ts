import { isoFromDay } from '../../../platform/dates.ts'
import { type Progress, silentProgress } from '../../../platform/progress.ts'
import { Rng } from '../../model/random.ts'
import { nyseTradingDays } from '../calendar.ts'
import { etfName, MACRO_FACTORS, MARKET_ETF, SECTOR_ETFS, STYLE_FACTORS } from '../etf-registry.ts'
import type { Dataset, FactorRow, FundamentalsFile, Panel, SecurityRow, TruthField } from '../format.ts'
import { INDEX_SERIES } from './etfs.ts'
import { companyFundamentals } from './fundamentals.ts'
import { INDUSTRIES } from './industries.ts'
import { simulateMarket } from './market.ts'
import { GENERATOR_VERSION, resolveSynthOptions, type SynthOptions } from './options.ts'
import { synthRates } from './rates.ts'
import { buildUniverse, companySecurities } from './universe.ts'

export { DEFAULT_SYNTH, type SynthOptions } from './options.ts'

/**
 * Generates the synthetic market as a canonical Dataset. Deterministic: the same options give
 * the same dataset, byte for byte once written. Independent parts draw from forked streams.
 */
export function generateSynthetic(
  options: Partial<SynthOptions> = {},
  progress: Progress = silentProgress,
): Dataset {
  const o = resolveSynthOptions(options)
  const calendar = nyseTradingDays(o.startDay, o.endDay)
  const T = calendar.length
  const root = new Rng(o.seed)
  const companies = buildUniverse(root.fork(10), o.stocks, calendar)
  const rates = synthRates(root.fork(11), calendar)
  const bill3m = rates.values[rates.tenors.indexOf('3m')]
  const market = simulateMarket(root.fork(12), calendar, companies, bill3m, progress)

  // Only ETFs that started trading inside the calendar become securities.
  const etfIdx = market.etfTickers.flatMap((_, f) =>
    market.etfPrice[f].some((v) => !Number.isNaN(v)) ? [f] : [],
  )
  const etfTickers = etfIdx.map((f) => market.etfTickers[f])
  const listed = new Set(etfTickers)
  const empty = new Float64Array(T).fill(Number.NaN)
  const etfPanel = (p: Panel) => etfIdx.map((f) => p[f])
  const blank = () => etfIdx.map(() => empty)
  const empty32 = new Float32Array(T).fill(Number.NaN)
  const blank32 = () => etfIdx.map(() => empty32)

  const securities: SecurityRow[] = etfIdx.map((f) => ({
    symbol: market.etfTickers[f],
    ticker: market.etfTickers[f],
    name: etfName(market.etfTickers[f]),
    assetType: 'etf',
    sector: null,
    industry: null,
    cik: null,
    validFrom: isoFromDay(calendar[market.etfPrice[f].findIndex((v) => !Number.isNaN(v))]),
    validTo: null,
  }))
  for (const c of companies) securities.push(...companySecurities(c, calendar))

  const fundamentals: FundamentalsFile[] = []
  if (o.fundamentals) {
    const frng = root.fork(13)
    progress.start('dataset: generate SEC filings (companies)', companies.length)
    companies.forEach((c, i) => {
      const inputs = {
        calendar,
        close: market.stock.close[i],
        shares: market.stock.shares[i],
        bill3m,
        endDay: o.endDay,
      }
      fundamentals.push(companyFundamentals(frng.fork(i), c, inputs))
      if (i % 100 === 0) progress.update(i)
    })
    progress.stop()
  }

  const truthPanels: Record<TruthField, Float32Array[]> = {
    beta_mkt: [...blank32(), ...market.truth.betaMkt],
    beta_sec: [...blank32(), ...market.truth.betaSec],
    beta_sub: [...blank32(), ...market.truth.betaSub],
    idio_var: [...blank32(), ...market.truth.idioVar],
    l3_res_er: [...blank32(), ...market.truth.l3ResEr],
  }
  return {
    source: {
      kind: 'synthetic',
      seed: o.seed,
      generator_version: GENERATOR_VERSION,
      params: { stocks: o.stocks, start: o.start, end: o.end, fundamentals: o.fundamentals },
    },
    calendar,
    securities,
    factors: factorRegistry(listed),
    symbols: [...etfTickers, ...companies.map((c) => c.symbol)],
    prices: {
      adj_close: [...etfPanel(market.etfPrice), ...market.stock.adj],
      close: [...etfPanel(market.etfPrice), ...market.stock.close],
      volume: [...etfPanel(market.etfVolume), ...market.stock.volume],
      shares_out: [...blank(), ...market.stock.shares],
    },
    rates,
    series: { names: INDEX_SERIES, values: INDEX_SERIES.map(() => market.vix) },
    fundamentals,
    truth: {
      fields: truthPanels,
      params: {
        description:
          'Population values at each day given the generator state: hierarchical betas against the ETFs trading that day (docs/methodology.md §5; beta_sub null when the subsector falls back to the sector ETF), idiosyncratic variance (GARCH + earnings and rare jumps), and the L3 residual ER.',
        seed: o.seed,
        generator_version: GENERATOR_VERSION,
      },
    },
    report: null,
  }
}

function factorRegistry(listed: Set<string>): FactorRow[] {
  const rows: FactorRow[] = [{ role: 'market', code: 'MARKET', ticker: MARKET_ETF, kind: 'etf' }]
  for (const [sector, etf] of Object.entries(SECTOR_ETFS)) {
    rows.push({ role: 'sector', code: sector, ticker: listed.has(etf) ? etf : null, kind: 'etf' })
  }
  for (const d of INDUSTRIES) {
    rows.push({
      role: 'subsector',
      code: d.industry,
      ticker: d.etf && listed.has(d.etf) ? d.etf : null,
      kind: 'etf',
    })
  }
  for (const [code, m] of Object.entries(MACRO_FACTORS)) {
    if (m.kind === 'index' || listed.has(m.ticker))
      rows.push({ role: 'macro', code, ticker: m.ticker, kind: m.kind })
  }
  for (const [code, t] of Object.entries(STYLE_FACTORS))
    if (listed.has(t)) rows.push({ role: 'style', code, ticker: t, kind: 'etf' })
  return rows
}
