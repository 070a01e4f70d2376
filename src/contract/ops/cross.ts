import { getEtfFactorReturns } from './etf-factor-returns.ts'
import { getIndustryPanel } from './industry-panel.ts'
import { getRankings, rankingsScreen } from './rankings.ts'
import { residualReversionBasket } from './reversion.ts'
import { getUniverseMembers } from './universe.ts'

/**
 * Cross-sectional operations (docs/methodology.md §11 "Universes", §12 "Cross-sectional
 * products"): the industry panel, rankings (screen and per ticker), universe membership, the
 * market/sector ETF factor returns and the residual-reversion basket. All are stored per trading day and answer at any `teo`.
 */

export { getUniverseMembers }

export const CROSS_OPS = {
  getIndustryPanel,
  rankingsScreen,
  getRankings,
  getUniverseMembers,
  getEtfFactorReturns,
  residualReversionBasket,
} as const
