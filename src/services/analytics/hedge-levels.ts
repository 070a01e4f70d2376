import { MARKET_ETF } from '../../engine/data/etf-registry.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'

/** Shared by /metrics, /decompose and /v4/decompose, so the three never disagree on a level. */

export type Num = number | null

/** A stored float (NaN = null) as a wire number. */
export const num = (v: number | undefined): Num => (v === undefined || Number.isNaN(v) ? null : v)

function levelName(code: number | undefined): 'L1' | 'L2' | 'L3' | null {
  return code === 1 ? 'L1' : code === 2 ? 'L2' : code === 3 ? 'L3' : null
}

/** The ETF ticker of a stored ETF code (-1 = none). */
export function etfOf(store: ModelStore, code: number | undefined): string | null {
  return code === undefined || code < 0 ? null : (store.etfs[code] ?? null)
}

function level(
  mkt: Num,
  sec: Num,
  sub: Num,
  ers: [Num, Num, Num, Num],
  etfs: [string | null, string | null],
) {
  return {
    market_hr: mkt,
    sector_hr: sec,
    subsector_hr: sub,
    market_er: ers[0],
    sector_er: ers[1],
    subsector_er: ers[2],
    residual_er: ers[3],
    hedge_etfs: { market: MARKET_ETF, sector: etfs[0], subsector: etfs[1] },
  }
}

/**
 * HedgeLevelsBlock from one day's MetricsV3 values: each level reads only its own
 * fields (L2.market_hr is l2_mkt_hr, L3.market_hr is l3_mkt_hr), so levels never share inputs.
 * Null when the stock has no L1 model yet.
 */
export function hedgeLevelsBlock(
  m: Record<string, Num>,
  codes: { lstar_level?: number; recommended_level?: number },
  sectorEtf: string | null,
  subsectorEtf: string | null,
) {
  const v = (k: string): Num => m[k] ?? null
  if (v('l1_mkt_hr') === null) return null
  return {
    L1: level(v('l1_mkt_hr'), null, null, [v('l1_mkt_er'), null, null, v('l1_res_er')], [null, null]),
    L2: level(
      v('l2_mkt_hr'),
      v('l2_sec_hr'),
      null,
      [v('l2_mkt_er'), v('l2_sec_er'), null, v('l2_res_er')],
      [sectorEtf, null],
    ),
    L3: level(
      v('l3_mkt_hr'),
      v('l3_sec_hr'),
      v('l3_sub_hr'),
      [v('l3_mkt_er'), v('l3_sec_er'), v('l3_sub_er'), v('l3_res_er')],
      [sectorEtf, subsectorEtf],
    ),
    recommended_level: levelName(codes.recommended_level),
    statistical_lstar: levelName(codes.lstar_level),
  }
}
