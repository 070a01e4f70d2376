/**
 * SEC EDGAR (`sec`): the listing of companies with a ticker, each filer's submissions header (SIC
 * code, former names), XBRL company facts, the cover-page shares outstanding and the daily index
 * of filings (sec-index.ts). The data is public
 * domain. The SEC asks every client to name itself with a contact e-mail in the User-Agent and to
 * stay under 10 requests a second (docs/sources/reference.md): the source is not built without a
 * User-Agent, and both hosts (www.sec.gov, data.sec.gov) share one client, hence one rate ceiling.
 */
import { gzipSync } from 'node:zlib'
import { AppError } from '../../platform/errors.ts'
import { canonicalTicker, isValidTicker } from '../data/aliases.ts'
import { readCompanyFacts } from '../data/fundamentals/facts.ts'
import { checkCompanyFacts } from '../data/import/fundamentals.ts'
import { configValue, type SourceEnv } from './env.ts'
import { HttpClient, type HttpClientOptions, SourceError } from './http.ts'
import { dailyIndexPath, parseMasterIndex } from './sec-index.ts'
import { sharesFromFacts } from './sec-shares.ts'
import type {
  CallOptions,
  CompanyFacts,
  Exchange,
  FilerProfile,
  FilingsCapability,
  Listing,
  Source,
  SourceFinding,
} from './types.ts'

export interface SecOptions {
  /** Who asks: a name and a contact e-mail (`Example Corp admin@example.com`). */
  userAgent: string
  wwwBaseUrl?: string
  dataBaseUrl?: string
  /** Requests a second, across both hosts (at most 10, the SEC's limit). */
  ratePerSecond?: number
  onFinding?: (f: SourceFinding) => void
  /** For tests: retries, backoff and the sleep of the HTTP client. */
  http?: Partial<HttpClientOptions>
}

export interface SecSource extends Source {
  filings: FilingsCapability
}

const USER_AGENT_HINT =
  'SEC_USER_AGENT must name the requester and a contact e-mail, e.g. "Example Corp admin@example.com"'

const cikPath = (cik: number) => `CIK${String(cik).padStart(10, '0')}.json`

function checkCik(cik: number): void {
  if (!Number.isSafeInteger(cik) || cik <= 0 || cik > 9_999_999_999)
    throw new AppError(
      'INVALID_REQUEST',
      `sec: CIK must be a positive integer of at most 10 digits, got ${cik}`,
    )
}

export function secSource(opts: SecOptions): SecSource {
  const ua = opts.userAgent.trim()
  if (!/\S+@\S+\.\S+/.test(ua)) throw new AppError('CONFIG_INVALID', USER_AGENT_HINT)
  const rate = opts.ratePerSecond ?? 8
  if (!(rate > 0 && rate <= 10))
    throw new AppError('CONFIG_INVALID', `sec: the request rate must be in (0, 10] a second, got ${rate}`)
  const data = (opts.dataBaseUrl ?? 'https://data.sec.gov').replace(/\/+$/, '')
  const http = new HttpClient({
    source: 'sec',
    baseUrl: opts.wwwBaseUrl ?? 'https://www.sec.gov',
    headers: { 'user-agent': ua },
    ratePerSecond: rate,
    concurrency: 4,
    ...opts.http,
  })
  // Company facts of the last CIK asked: `fundamentals` and `shares` of one filer share a download.
  let lastFacts: { cik: number; body: Promise<Buffer | null> } | null = null
  const factsBody = (cik: number, o?: CallOptions): Promise<Buffer | null> => {
    checkCik(cik)
    if (lastFacts?.cik !== cik) {
      const body = http
        .get(`${data}/api/xbrl/companyfacts/${cikPath(cik)}`, {
          allow: [404],
          signal: o?.signal,
          accept: 'application/json',
        })
        .then((a) => (a.status === 404 ? null : Buffer.from(a.body)))
      lastFacts = { cik, body }
      body.catch(() => {
        if (lastFacts?.body === body) lastFacts = null
      })
    }
    return lastFacts.body
  }
  const finding = (detail: string, subject?: string) => opts.onFinding?.({ source: 'sec', detail, subject })
  return {
    name: 'sec',
    securities: {
      async list(o) {
        const doc = await http.getJson('files/company_tickers_exchange.json', { signal: o?.signal })
        return listingsFromExchangeFile(doc, finding)
      },
    },
    fundamentals: {
      async companyFacts(cik, o) {
        const body = await factsBody(cik, o)
        return body === null ? null : checkedFacts(cik, body)
      },
    },
    shares: {
      async shares(cik, o) {
        const body = await factsBody(cik, o)
        return body === null ? [] : sharesFromFacts(parseFacts(cik, body), cik)
      },
    },
    filings: {
      async submissions(cik, o) {
        checkCik(cik)
        const doc = await http.getJson(`${data}/submissions/${cikPath(cik)}`, {
          allow: [404],
          signal: o?.signal,
        })
        return doc === null ? null : readSubmissions(doc)
      },
      async dailyIndex(date, o) {
        if (!/^\d{4}-\d{2}-\d{2}$/.test(date))
          throw new AppError('INVALID_REQUEST', `sec: the daily index date must be YYYY-MM-DD, got ${date}`)
        const path = dailyIndexPath(date)
        const text = await http.getText(path, { allow: [404], signal: o?.signal, accept: 'text/plain' })
        return text === null ? null : parseMasterIndex(text, path)
      },
    },
  }
}

function parseFacts(cik: number, body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'))
  } catch (e) {
    throw new SourceError('sec', 200, `unreadable company facts of CIK ${cik}: ${(e as Error).message}`)
  }
}

/** The stored form of company facts: checked as the importer checks a file, then gzip-compressed. */
function checkedFacts(cik: number, body: Buffer): CompanyFacts {
  try {
    checkCompanyFacts(`companyfacts ${cikPath(cik)}`, body, cik)
    readCompanyFacts(JSON.parse(body.toString('utf8')))
  } catch (e) {
    throw new SourceError('sec', 200, (e as Error).message, e)
  }
  return { cik, gzipped: new Uint8Array(gzipSync(body)) }
}

const EXCHANGES: Readonly<Record<string, Exchange>> = {
  NYSE: 'NYSE',
  NASDAQ: 'NASDAQ',
  'NYSE AMERICAN': 'NYSE American',
  'NYSE MKT': 'NYSE American',
  AMEX: 'NYSE American',
  CBOE: 'BATS',
  OTC: 'OTC',
}

/**
 * `company_tickers_exchange.json` (`{fields: [cik, name, ticker, exchange], data: [[…], …]}`) as
 * listings. The SEC lists current tickers only: every row is `active`, nothing is known of
 * delisted names or first dates. Rows on NYSE, Nasdaq and NYSE American are `stock` (the file
 * does not tell common stock from an ETF trust or a unit; a ticker with a suffix after `-`, a
 * preferred series, is `other`); OTC, Cboe and rows without exchange are `other`.
 */
function listingsFromExchangeFile(
  doc: unknown,
  finding: (detail: string, subject?: string) => void,
): Listing[] {
  const d = doc as { fields?: unknown; data?: unknown } | null
  if (!Array.isArray(d?.fields) || !Array.isArray(d?.data))
    throw new SourceError('sec', 200, 'company_tickers_exchange.json: expected {fields: [...], data: [...]}')
  const col = (name: string) => (d.fields as unknown[]).indexOf(name)
  const [iCik, iName, iTicker, iExchange] = ['cik', 'name', 'ticker', 'exchange'].map(col)
  if (iCik < 0 || iTicker < 0)
    throw new SourceError(
      'sec',
      200,
      `company_tickers_exchange.json: fields lack cik or ticker (${JSON.stringify(d.fields)})`,
    )
  const out: Listing[] = []
  for (const [n, row] of (d.data as unknown[]).entries()) {
    const r = Array.isArray(row) ? row : []
    const cik = r[iCik]
    const ticker = typeof r[iTicker] === 'string' ? canonicalTicker(r[iTicker]) : ''
    if (typeof cik !== 'number' || !Number.isSafeInteger(cik) || cik <= 0 || !isValidTicker(ticker)) {
      finding(
        `company_tickers_exchange.json: row ${n + 1} skipped: no valid cik and ticker (${JSON.stringify(row).slice(0, 120)})`,
      )
      continue
    }
    const rawExchange = typeof r[iExchange] === 'string' ? (r[iExchange] as string).trim().toUpperCase() : ''
    const exchange = EXCHANGES[rawExchange] ?? 'other'
    const listed = exchange === 'NYSE' || exchange === 'NASDAQ' || exchange === 'NYSE American'
    out.push({
      ticker,
      name: typeof r[iName] === 'string' ? (r[iName] as string) : ticker,
      exchange,
      assetType: listed && !ticker.includes('-') ? 'stock' : 'other',
      cik,
      permanentId: null,
      firstDate: null,
      lastDate: null,
      active: true,
    })
  }
  return out
}

const isoDate = (v: unknown): string | null =>
  typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v) ? v.slice(0, 10) : null
const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []

/** The parts of a submissions document erm3 uses. */
function readSubmissions(doc: unknown): FilerProfile {
  const d = (doc ?? {}) as Record<string, unknown>
  const cik = typeof d.cik === 'string' || typeof d.cik === 'number' ? Number(d.cik) : Number.NaN
  if (!Number.isSafeInteger(cik) || cik <= 0)
    throw new SourceError('sec', 200, `submissions: "cik" missing or not a number (${JSON.stringify(d.cik)})`)
  const sic = typeof d.sic === 'string' || typeof d.sic === 'number' ? Number(d.sic) : Number.NaN
  const former = Array.isArray(d.formerNames) ? (d.formerNames as Record<string, unknown>[]) : []
  return {
    cik,
    name: typeof d.name === 'string' ? d.name : '',
    sic: Number.isInteger(sic) && sic > 0 ? sic : null,
    sicDescription: typeof d.sicDescription === 'string' && d.sicDescription !== '' ? d.sicDescription : null,
    tickers: strings(d.tickers).map(canonicalTicker),
    exchanges: strings(d.exchanges),
    formerNames: former
      .filter((f) => typeof f?.name === 'string')
      .map((f) => ({ name: f.name as string, from: isoDate(f.from), to: isoDate(f.to) }))
      .sort((a, b) => (a.from ?? '').localeCompare(b.from ?? '')),
  }
}

/** The `sec` source from SEC_USER_AGENT, SEC_WWW_BASE_URL, SEC_DATA_BASE_URL, SEC_RATE_PER_SECOND. */
export function secFromEnv(env: SourceEnv, onFinding?: (f: SourceFinding) => void): SecSource {
  const userAgent = configValue(env, 'SEC_USER_AGENT')
  if (userAgent === null) throw new AppError('CONFIG_INVALID', `${USER_AGENT_HINT}; it is not set`)
  return secSource({
    userAgent,
    wwwBaseUrl: configValue(env, 'SEC_WWW_BASE_URL') ?? undefined,
    dataBaseUrl: configValue(env, 'SEC_DATA_BASE_URL') ?? undefined,
    ratePerSecond: configValue(env, 'SEC_RATE_PER_SECOND'),
    onFinding,
  })
}
