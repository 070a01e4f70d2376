/**
 * Each stock's `sector` and `industry` codes in erm3's registry (GICS sector and sub-industry
 * names, the keys of the sector and subsector factor rows), from what the sources give, in this
 * order of precedence:
 * 1. `override`: the user's map (ticker → sector, industry) wins over everything;
 * 2. `holdings:ETF`: membership of a sector ETF's holdings gives the sector; membership of a
 *    subsector ETF's holdings gives the industry (and the sector, when no sector ETF holds the
 *    stock). Several ETFs: the largest weight wins; equal or unknown weights: the ETF listed first
 *    in the classification map. A subsector ETF of another sector than the stock's is ignored. An
 *    ETF that stands for several industries (KCE: exchanges and asset managers) gives the one
 *    the stock's SIC code names, else the first listed;
 * 3. `sic:NNNN`: the SEC SIC rules (sic.ts) for whatever is still unknown, an industry only when
 *    it belongs to the stock's sector and the map lists it.
 * A stock none of these place is left unclassified (null codes, null provenance).
 */
import { AppError } from '../../platform/errors.ts'
import { canonicalTicker, isValidTicker } from '../data/aliases.ts'
import { SECTOR_ETFS } from '../data/etf-registry.ts'
import type { ClassificationMap } from '../data/import/classification-map.ts'
import { INDUSTRIES } from '../data/synth/industries.ts'
import { csvRows } from './csv-rows.ts'
import { sicClassification } from './sic.ts'
import type { EtfHolding } from './types.ts'

export interface Classification {
  ticker: string
  sector: string | null
  industry: string | null
  /** Where each came from: `override`, `holdings:XLK`, `sic:3674`; null when unknown. */
  sectorFrom: string | null
  industryFrom: string | null
}

export interface ClassifyInput {
  tickers: readonly string[]
  holdings: readonly EtfHolding[]
  /** SIC code by ticker (SEC submissions); absent or null: none. */
  sic?: ReadonlyMap<string, number | null>
  overrides?: ReadonlyMap<string, { sector: string; industry: string | null }>
  /** The sector and industry ETFs; default: the Select Sector SPDRs and the built-in industries. */
  map?: ClassificationMap
}

/** The built-in classification map: Select Sector SPDRs and the built-in industries' ETFs. */
export function builtInClassificationMap(): ClassificationMap {
  const sectors = new Map(Object.entries(SECTOR_ETFS))
  const industries = new Map(INDUSTRIES.map((d) => [d.industry, { sector: d.sector, etf: d.etf }]))
  return { sectors, industries }
}

interface Held {
  etf: string
  weight: number | null
  rank: number
}

/** The holding that wins: largest weight, then the ETF listed first. */
function best(list: readonly Held[]): Held | null {
  let top: Held | null = null
  for (const h of list) {
    const w = h.weight ?? Number.NEGATIVE_INFINITY
    const t = top?.weight ?? Number.NEGATIVE_INFINITY
    if (top === null || w > t || (w === t && h.rank < top.rank)) top = h
  }
  return top
}

export function classify(input: ClassifyInput): Classification[] {
  const map = input.map ?? builtInClassificationMap()
  const sectorOfEtf = new Map<string, string>()
  for (const [sector, etf] of map.sectors) if (!sectorOfEtf.has(etf)) sectorOfEtf.set(etf, sector)
  const industriesOfEtf = new Map<string, string[]>()
  for (const [industry, { etf }] of map.industries) {
    if (etf === null || sectorOfEtf.has(etf)) continue
    industriesOfEtf.set(etf, [...(industriesOfEtf.get(etf) ?? []), industry])
  }
  const rank = new Map([...sectorOfEtf.keys(), ...industriesOfEtf.keys()].map((e, i) => [e, i]))
  const byTicker = new Map<string, { sector: Held[]; industry: Held[] }>()
  for (const h of input.holdings) {
    const r = rank.get(h.etf)
    if (r === undefined) continue
    const e = byTicker.get(h.ticker) ?? { sector: [], industry: [] }
    ;(sectorOfEtf.has(h.etf) ? e.sector : e.industry).push({ etf: h.etf, weight: h.weight, rank: r })
    byTicker.set(h.ticker, e)
  }
  return input.tickers.map((ticker) => {
    const o = input.overrides?.get(ticker)
    if (o)
      return {
        ticker,
        sector: o.sector,
        industry: o.industry,
        sectorFrom: 'override',
        industryFrom: 'override',
      }
    const sic = input.sic?.get(ticker) ?? null
    const bySic = sic === null ? null : sicClassification(sic)
    const held = byTicker.get(ticker)
    const c: Classification = { ticker, sector: null, industry: null, sectorFrom: null, industryFrom: null }
    const s = best(held?.sector ?? [])
    if (s) {
      c.sector = sectorOfEtf.get(s.etf) ?? null
      c.sectorFrom = `holdings:${s.etf}`
    }
    const inSector = (held?.industry ?? []).filter(
      (h) =>
        c.sector === null ||
        industriesOfEtf.get(h.etf)?.some((i) => map.industries.get(i)?.sector === c.sector),
    )
    const ind = best(inSector)
    if (ind) {
      const candidates = (industriesOfEtf.get(ind.etf) ?? []).filter(
        (i) => c.sector === null || map.industries.get(i)?.sector === c.sector,
      )
      c.industry = candidates.find((i) => i === bySic?.industry) ?? candidates[0] ?? null
      c.industryFrom = `holdings:${ind.etf}`
      if (c.sector === null && c.industry !== null) {
        c.sector = map.industries.get(c.industry)?.sector ?? null
        c.sectorFrom = c.industryFrom
      }
    }
    if (bySic && c.sector === null && map.sectors.has(bySic.sector)) {
      c.sector = bySic.sector
      c.sectorFrom = `sic:${sic}`
    }
    const sicIndustry = bySic?.industry ?? null
    if (c.industry === null && sicIndustry !== null && map.industries.get(sicIndustry)?.sector === c.sector) {
      c.industry = sicIndustry
      c.industryFrom = `sic:${sic}`
    }
    return c
  })
}

/**
 * The user's override map, a CSV `ticker,sector,industry` (industry may be empty). Every sector and
 * industry must be one of the classification map's; a bad row is an error naming its line.
 */
export function parseOverrides(
  text: string,
  file: string,
  map: ClassificationMap = builtInClassificationMap(),
): Map<string, { sector: string; industry: string | null }> {
  const rows = csvRows(text)
  const header = (rows[0] ?? []).map((c) => c.trim().toLowerCase())
  const [iT, iS, iI] = ['ticker', 'sector', 'industry'].map((n) => header.indexOf(n))
  if (iT < 0 || iS < 0)
    throw new AppError('INVALID_REQUEST', `${file}: expected columns ticker,sector,industry`)
  const out = new Map<string, { sector: string; industry: string | null }>()
  for (const [n, r] of rows.slice(1).entries()) {
    if (r.every((c) => c.trim() === '')) continue
    const where = `${file}:${n + 2}`
    const ticker = canonicalTicker(r[iT] ?? '')
    const sector = (r[iS] ?? '').trim()
    const industry = iI >= 0 && (r[iI] ?? '').trim() !== '' ? (r[iI] ?? '').trim() : null
    const fail = (m: string) => {
      throw new AppError('INVALID_REQUEST', `${where}: ${m}`)
    }
    if (!isValidTicker(ticker)) fail(`"${r[iT] ?? ''}" is not a valid ticker`)
    if (!map.sectors.has(sector)) fail(`sector "${sector}" is not one of the classification map's`)
    if (industry !== null && map.industries.get(industry)?.sector !== sector)
      fail(`industry "${industry}" is not an industry of ${sector} in the classification map`)
    if (out.has(ticker)) fail(`${ticker} given twice`)
    out.set(ticker, { sector, industry })
  }
  return out
}
