/**
 * ETF holdings (`holdings`): which stocks each sector and subsector ETF holds, from the daily
 * files issuers publish — State Street SPDRs as `.xlsx`, iShares as CSV, other issuers through a
 * configurable plain CSV. The issuer of an ETF is read from its name in the ETF registry. A file
 * that is unavailable or unreadable is a finding and the ETF is left out: classification then
 * falls back to SIC codes for its stocks. The issuers' terms of use apply to these files
 * (docs/sources/reference.md).
 */
import { AppError } from '../../platform/errors.ts'
import { ETF_INFO } from '../data/etf-registry.ts'
import { configValue, type SourceEnv } from './env.ts'
import { genericHoldings, HoldingsFileError, isharesHoldings, ssgaHoldings } from './holdings-files.ts'
import { HttpClient, type HttpClientOptions, SourceError } from './http.ts'
import type { CallOptions, EtfHolding, Source, SourceFinding } from './types.ts'
import { readXlsxFirstSheet } from './xlsx.ts'

const SSGA_URL =
  'https://www.ssga.com/us/en/intermediary/library-content/products/fund-data/etfs/us/holdings-daily-us-en-{etf_lower}.xlsx'
const ISHARES_URL =
  'https://www.ishares.com/us/products/{product}/fund/1467271812596.ajax?fileType=csv&fileName={etf}_holdings&dataType=fund'

/**
 * iShares product ids of the registry's iShares sector ETFs. A wrong id cannot misclassify: the
 * file's first line (the fund's name) must be the ETF's name, or the file is refused.
 */
const ISHARES_PRODUCTS: Readonly<Record<string, string>> = {
  SOXX: '239705',
  IGV: '239771',
  IBB: '239699',
  IHI: '239516',
  ITB: '239512',
  ITA: '239502',
  IYR: '239520',
}

export type Issuer = 'ssga' | 'ishares' | 'other'

export function issuerOf(etf: string): Issuer {
  const name = ETF_INFO[etf]?.name ?? ''
  if (/^iShares\b/.test(name)) return 'ishares'
  if (/\bSPDR\b/.test(name)) return 'ssga'
  return 'other'
}

export interface HoldingsOptions {
  /** URL templates: `{etf}`, `{etf_lower}`, and for iShares `{product}`. */
  ssgaUrl?: string
  isharesUrl?: string
  /** Product ids added to (and overriding) the built-in ones. */
  isharesProducts?: Record<string, string>
  /** Other issuers: a `ticker,weight[,date]` CSV; null: they have no holdings. */
  csvUrl?: string | null
  onFinding?: (f: SourceFinding) => void
  /** The date a file without one is taken as of (default: today, UTC). */
  today?: () => string
  http?: Partial<HttpClientOptions>
}

function fill(template: string, etf: string, product: string): string {
  return template
    .replaceAll('{etf_lower}', encodeURIComponent(etf.toLowerCase()))
    .replaceAll('{etf}', encodeURIComponent(etf))
    .replaceAll('{product}', encodeURIComponent(product))
}

export function holdingsSource(opts: HoldingsOptions = {}): Source {
  const products = { ...ISHARES_PRODUCTS, ...opts.isharesProducts }
  const today = opts.today ?? (() => new Date().toISOString().slice(0, 10))
  const templates: Record<Issuer, string | null> = {
    ssga: opts.ssgaUrl ?? SSGA_URL,
    ishares: opts.isharesUrl ?? ISHARES_URL,
    other: opts.csvUrl ?? null,
  }
  const clients = new Map<string, HttpClient>()
  const client = (url: string) => {
    const origin = new URL(url).origin
    let c = clients.get(origin)
    if (!c) {
      c = new HttpClient({
        source: 'holdings',
        baseUrl: origin,
        ratePerSecond: 2,
        concurrency: 2,
        maxRetries: 3,
        ...opts.http,
      })
      clients.set(origin, c)
    }
    return c
  }
  const finding = (etf: string, detail: string) =>
    opts.onFinding?.({ source: 'holdings', subject: etf, detail: `${etf}: ${detail}` })
  /** The ETF is left out, with a finding saying why. */
  const skip = (etf: string, detail: string): null => {
    finding(etf, detail)
    return null
  }

  async function one(etf: string, o?: CallOptions): Promise<EtfHolding[] | null> {
    const issuer = issuerOf(etf)
    const template = templates[issuer]
    if (template === null)
      return skip(etf, 'no holdings file configured for its issuer (ERM3_HOLDINGS_CSV_URL)')
    const product = products[etf] ?? ''
    if (template.includes('{product}') && product === '')
      return skip(etf, 'no iShares product id (ERM3_HOLDINGS_ISHARES_PRODUCTS)')
    const url = fill(template, etf, product)
    let body: Uint8Array
    try {
      const a = await client(url).get(url, { allow: [403, 404, 410], signal: o?.signal })
      if (a.status >= 300) return skip(etf, `holdings file unavailable (HTTP ${a.status} from ${a.where})`)
      body = a.body
    } catch (e) {
      if (o?.signal?.aborted || !(e instanceof SourceError)) throw e
      return skip(etf, `holdings file unavailable (${e.message})`)
    }
    try {
      if (issuer === 'ssga') return ssgaHoldings(etf, await readXlsxFirstSheet(body))
      const text = new TextDecoder().decode(body)
      if (issuer === 'ishares') return isharesHoldings(etf, text, ETF_INFO[etf]?.name ?? null)
      return genericHoldings(etf, text, today())
    } catch (e) {
      if (!(e instanceof HoldingsFileError) && !(e as Error).message?.startsWith('not an xlsx')) throw e
      return skip(etf, `holdings file unreadable: ${(e as Error).message}`)
    }
  }

  return {
    name: 'holdings',
    classification: {
      async holdings(etfs, o) {
        const out: EtfHolding[] = []
        for (const etf of etfs) {
          const h = await one(etf, o)
          if (h === null) continue
          if (h.length === 0) finding(etf, 'the holdings file lists no stock')
          out.push(...h)
        }
        return out
      },
    },
  }
}

/** `ETF=id,ETF=id` → a map; a malformed entry is a clear error naming the variable. */
export function parseProducts(raw: string | null): Record<string, string> {
  const out: Record<string, string> = {}
  if (raw === null) return out
  for (const part of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z0-9.]+)=(\d+)$/.exec(part)
    if (!m)
      throw new AppError(
        'CONFIG_INVALID',
        `ERM3_HOLDINGS_ISHARES_PRODUCTS must be ETF=id,… (e.g. SOXX=239705); "${part}" is not`,
      )
    out[(m[1] ?? '').toUpperCase()] = m[2] ?? ''
  }
  return out
}

/** The `holdings` source from the ERM3_HOLDINGS_* variables. */
export function holdingsFromEnv(env: SourceEnv, onFinding?: (f: SourceFinding) => void): Source {
  return holdingsSource({
    ssgaUrl: configValue(env, 'ERM3_HOLDINGS_SSGA_URL') ?? undefined,
    isharesUrl: configValue(env, 'ERM3_HOLDINGS_ISHARES_URL') ?? undefined,
    isharesProducts: parseProducts(configValue(env, 'ERM3_HOLDINGS_ISHARES_PRODUCTS')),
    csvUrl: configValue(env, 'ERM3_HOLDINGS_CSV_URL'),
    onFinding,
  })
}
