import { accountRoutes } from './account.ts'
import { appRoutes } from './app.ts'
import { authRoutes } from './auth.ts'
import { balanceRoutes } from './balance.ts'
import { batchRoutes } from './batch.ts'
import { billingRoutes } from './billing.ts'
import { chatRoutes } from './chat.ts'
import { correlationRoutes } from './correlation.ts'
import { dataRoutes } from './data.ts'
import { decomposeRoutes } from './decompose.ts'
import { docsRoutes } from './docs.ts'
import { estimateRoutes } from './estimate.ts'
import { etfRoutes } from './etf.ts'
import { etfReturnsRoutes } from './etf-returns.ts'
import { fundamentalsRoutes } from './fundamentals.ts'
import { healthRoutes } from './health.ts'
import { industryPanelRoutes } from './industry-panel.ts'
import { invoicesRoutes } from './invoices.ts'
import { l3DecompositionRoutes } from './l3-decomposition.ts'
import { llmsRoutes } from './llms.ts'
import { lstarRoutes } from './lstar.ts'
import { metricsRoutes } from './metrics.ts'
import { metricsPromRoutes } from './metrics-prom.ts'
import { oauthRoutes } from './oauth.ts'
import { openapiRoutes } from './openapi.ts'
import { plaidRoutes } from './plaid.ts'
import { pricingRoutes } from './pricing.ts'
import { rankingsRoutes } from './rankings.ts'
import { returnsRoutes } from './returns.ts'
import { returnsDecompositionRoutes } from './returns-decomposition.ts'
import { rootRoutes } from './root.ts'
import { signalsRoutes } from './signals.ts'
import { snapshotRoutes } from './snapshot.ts'
import { tickerReturnsRoutes } from './ticker-returns.ts'
import { tickersRoutes } from './tickers.ts'
import type { RouteDeps, RouteFile } from './types.ts'
import { universeRoutes } from './universe.ts'
import { v4Routes } from './v4.ts'
import { wellKnownRoutes } from './well-known.ts'

/** Every route file of the REST API (README.md: which URL is in which file). */
const ROUTE_FILES: readonly ((deps: RouteDeps) => RouteFile)[] = [
  accountRoutes,
  appRoutes,
  authRoutes,
  balanceRoutes,
  batchRoutes,
  billingRoutes,
  chatRoutes,
  correlationRoutes,
  dataRoutes,
  decomposeRoutes,
  docsRoutes,
  estimateRoutes,
  etfRoutes,
  etfReturnsRoutes,
  fundamentalsRoutes,
  healthRoutes,
  industryPanelRoutes,
  invoicesRoutes,
  l3DecompositionRoutes,
  llmsRoutes,
  lstarRoutes,
  metricsRoutes,
  metricsPromRoutes,
  oauthRoutes,
  openapiRoutes,
  plaidRoutes,
  pricingRoutes,
  rankingsRoutes,
  returnsRoutes,
  returnsDecompositionRoutes,
  rootRoutes,
  signalsRoutes,
  snapshotRoutes,
  tickerReturnsRoutes,
  tickersRoutes,
  universeRoutes,
  v4Routes,
  wellKnownRoutes,
]

export function routeFiles(deps: RouteDeps): RouteFile[] {
  return ROUTE_FILES.map((build) => build(deps))
}
