/**
 * Where real market data comes from: one `Source` interface over every vendor and public file
 * erm3 can fetch (docs/data-sources.md lists each, its base URL variable and its terms). A source
 * implements the capabilities it has; the fetch and update pipeline (engine/update) asks for a
 * capability, never for a vendor.
 *
 * Dates are ISO `YYYY-MM-DD` strings (the exchange's trading date, America/New_York). Tickers are
 * canonical (`canonicalTicker`, engine/data/aliases.ts: `BRK.B`, never `BRK-B`).
 */

/** One trading day of one security, as the vendor reports it. */
export interface DailyBar {
  date: string
  /** Unadjusted close, in dollars. */
  close: number
  /**
   * Total-return adjusted close: splits and cash dividends folded in, so that
   * adjClose[t] / adjClose[t-1] − 1 is the day's total return. Its scale is the vendor's (the latest
   * day usually equals `close`); only ratios are meaningful.
   */
  adjClose: number
  /** Shares traded (unadjusted); null when the vendor gives none. */
  volume: number | null
  /** Split ratio effective this day (new shares per old share, 2 = 2-for-1); 1 = none. */
  splitFactor: number
  /** Cash dividend per share going ex this day; 0 = none. */
  dividend: number
}

/** A split or a cash dividend, announced by the vendor independently of the bars. */
export interface CorporateAction {
  ticker: string
  /** Ex-date (splits: the first day trading on the new basis). */
  date: string
  kind: 'split' | 'dividend'
  /** Splits: new shares per old share. Dividends: cash per share. */
  value: number
}

export type Exchange = 'NYSE' | 'NASDAQ' | 'NYSE American' | 'NYSE Arca' | 'BATS' | 'OTC' | 'other'

/** A security a listing source knows of (active or delisted). */
export interface Listing {
  ticker: string
  name: string
  exchange: Exchange
  /** `stock`: common stock (and ADRs only where the vendor says common); `etf`; `other`: skipped. */
  assetType: 'stock' | 'etf' | 'other'
  cik: number | null
  /** A vendor's permanent id when it has one (Polygon composite FIGI, Tiingo permaTicker). */
  permanentId: string | null
  /** First and last day with prices, when the vendor says (null: unknown / still trading). */
  firstDate: string | null
  lastDate: string | null
  active: boolean
}

/** A ticker change (`from` stops trading the day before `date`, `to` starts on `date`). */
export interface TickerChange {
  date: string
  from: string
  to: string
  permanentId: string | null
  cik: number | null
}

/** A stock's membership of a sector or subsector ETF, from the ETF's published holdings. */
export interface EtfHolding {
  etf: string
  ticker: string
  /** Weight in the fund, a fraction (0.071 = 7.1 %); null when the file gives none. */
  weight: number | null
  /** The holdings file's own as-of date. */
  asOf: string
}

/** Shares outstanding from a filing's cover page (dei:EntityCommonStockSharesOutstanding). */
export interface SharesPoint {
  cik: number
  /** The date the count refers to (the cover page's `end`). */
  end: string
  /** The filing date: the count is known from this day on (point in time). */
  filed: string
  shares: number
}

/** One observation of an interest rate, in fractions (0.045 = 4.5 %). */
export interface RatePoint {
  date: string
  value: number
}

/** Company facts of one CIK: SEC's JSON body, gzip-compressed, as the dataset stores it. */
export interface CompanyFacts {
  cik: number
  gzipped: Uint8Array
}

/** What every call may take: cancellation (the CLI's Ctrl-C, the scheduler's stop). */
export interface CallOptions {
  signal?: AbortSignal
}

/** What `securities.changes` may take besides cancellation. */
export interface ChangeOptions extends CallOptions {
  /**
   * The securities to look up, for a source that answers one security per call (Polygon): their
   * permanent ids (`Listing.permanentId`) or tickers. Without it the source picks the listings
   * that stopped trading in the window.
   */
  candidates?: readonly string[]
}

export interface PriceCapability {
  /** Daily bars of one ticker over [from, to] (to null: up to the latest), oldest first. */
  history(ticker: string, from: string, to: string | null, o?: CallOptions): Promise<DailyBar[]>
  /**
   * Every security's bar for one date in one call, when the vendor has a bulk endpoint (Tiingo's
   * all-tickers latest day, Polygon's grouped daily). Keyed by canonical ticker. `adjClose` of a
   * bulk bar equals `close` unless the vendor adjusts it; actions come from `splitFactor` and
   * `dividend` or from the `actions` capability.
   */
  day?(date: string, o?: CallOptions): Promise<Map<string, DailyBar>>
}

export interface ActionCapability {
  /** Splits and dividends with ex-date in [from, to]. */
  between(from: string, to: string, o?: CallOptions): Promise<CorporateAction[]>
}

export interface SecuritiesCapability {
  /** Every listing the source knows (including delisted ones, when it has them). */
  list(o?: CallOptions): Promise<Listing[]>
  /** Ticker changes with date in [from, to], when the source publishes them. */
  changes?(from: string, to: string, o?: ChangeOptions): Promise<TickerChange[]>
}

interface ClassificationCapability {
  /** The current holdings of each of these ETFs (an ETF whose file is unavailable is left out). */
  holdings(etfs: readonly string[], o?: CallOptions): Promise<EtfHolding[]>
}

interface SharesCapability {
  /** Every shares-outstanding point of a filer, oldest filing first. */
  shares(cik: number, o?: CallOptions): Promise<SharesPoint[]>
}

interface FundamentalsCapability {
  /** SEC company facts of a filer; null when it has none (404). */
  companyFacts(cik: number, o?: CallOptions): Promise<CompanyFacts | null>
}

/** A filer's submissions header (`data.sec.gov/submissions/CIK##########.json`), the parts erm3 uses. */
export interface FilerProfile {
  cik: number
  name: string
  /** Standard Industrial Classification code (null: none on file). */
  sic: number | null
  sicDescription: string | null
  tickers: string[]
  exchanges: string[]
  /** Earlier names, oldest first (`from`/`to`: ISO dates, null when SEC gives none). */
  formerNames: { name: string; from: string | null; to: string | null }[]
}

/** One filing of a day's EDGAR index. */
export interface FilingIndexEntry {
  cik: number
  company: string
  /** The form type as EDGAR writes it (`10-K`, `10-Q/A`, `8-K`). */
  form: string
  /** ISO date the filing was accepted. */
  filed: string
  /** Path of the filing under `Archives/` (`edgar/data/320193/0000320193-24-000123.txt`). */
  path: string
}

export interface FilingsCapability {
  /** A filer's header; null when EDGAR has none (404). */
  submissions(cik: number, o?: CallOptions): Promise<FilerProfile | null>
  /**
   * The filings of one day (EDGAR's daily index); null when there is no index for that day (a
   * weekend, a holiday, or one not published yet).
   */
  dailyIndex(date: string, o?: CallOptions): Promise<FilingIndexEntry[] | null>
}

interface RatesCapability {
  /** The 3-month Treasury bill rate over [from, to], in fractions. */
  tbill3m(from: string, to: string, o?: CallOptions): Promise<RatePoint[]>
}

export type SourceName = 'tiingo' | 'polygon' | 'sec' | 'treasury' | 'fred' | 'holdings'

export interface Source {
  readonly name: SourceName
  prices?: PriceCapability
  actions?: ActionCapability
  securities?: SecuritiesCapability
  classification?: ClassificationCapability
  shares?: SharesCapability
  fundamentals?: FundamentalsCapability
  rates?: RatesCapability
  filings?: FilingsCapability
}

/**
 * Something a source noticed without failing: a holdings file that is unavailable, a malformed row
 * skipped. Sources that can report them take an `onFinding` callback; the update pipeline turns
 * them into its findings.
 */
export interface SourceFinding {
  source: SourceName
  detail: string
  /** The ETF or the ticker concerned, when there is one. */
  subject?: string
}
