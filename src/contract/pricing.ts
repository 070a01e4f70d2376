/**
 * The one pricing table (docs/decisions/money.md): /pricing, OpenAPI `x-pricing`, /estimate,
 * metering and the manifests all read it. Prices are integer micro-dollars.
 */
type PricingModel = 'per_request' | 'per_position' | 'per_token' | 'subscription'

export interface Capability {
  /** Stable capability id (also the MCP tool's billing capability). */
  id: string
  /** Operation id in the contract that this capability prices. */
  operationId: string
  model: PricingModel
  /** Per call (per_request) or per successful position (per_position). */
  unitMicros: number
  /** Minimum charge of a call that succeeds at all (per_position). */
  minChargeMicros: number | null
  /**
   * per_request with a batch form: the price of a call that names more than one ticker (its
   * `tickers`), whatever its size; `unitMicros` is then the price of a one-ticker call.
   */
  batchUnitMicros: number | null
  /** per_token: `unitMicros` is the price of 1000 input tokens, this the price of 1000 output tokens. */
  outputUnitMicros: number | null
  billingCode: string
  tier: 'baseline' | 'premium'
  description: string
}

const usd = (x: number) => Math.round(x * 1_000_000)

function cap(
  id: string,
  operationId: string,
  price: number,
  billingCode: string,
  description: string,
  extra: Partial<
    Pick<Capability, 'model' | 'minChargeMicros' | 'tier' | 'batchUnitMicros' | 'outputUnitMicros'>
  > = {},
): Capability {
  return {
    id,
    operationId,
    model: extra.model ?? 'per_request',
    unitMicros: usd(price),
    minChargeMicros: extra.minChargeMicros ?? null,
    batchUnitMicros: extra.batchUnitMicros ?? null,
    outputUnitMicros: extra.outputUnitMicros ?? null,
    billingCode,
    tier: extra.tier ?? 'baseline',
    description,
  }
}

/** Every priced capability of the interface. Only those whose operation exists are served. */
export const CAPABILITIES: readonly Capability[] = [
  cap('metrics', 'getMetrics', 0.001, 'metrics_v3', 'Latest MetricsV3 snapshot of one ticker'),
  cap('decompose', 'decompose', 0.001, 'metrics_v3', 'Market/sector/subsector/residual decomposition'),
  cap('decompose_v4', 'decomposeV4', 0.001, 'metrics_v3', 'Named-block decomposition (v4)'),
  cap('ticker_returns', 'getTickerReturns', 0.005, 'ticker_returns_v1', 'Daily returns with L3 HR/ER'),
  cap('returns', 'getReturns', 0.005, 'returns_v1', 'Daily gross returns of a stock'),
  cap('etf_returns', 'getEtfReturns', 0.005, 'etf_returns_v1', 'Daily gross returns of an ETF'),
  cap('lstar', 'getLstar', 0.02, 'lstar_v1', 'Dispatch-level (Lstar) series'),
  cap('batch_lstar', 'batchLstar', 0.005, 'batch_lstar_v1', 'Lstar series for up to 100 tickers', {
    model: 'per_position',
    minChargeMicros: usd(0.01),
  }),
  cap(
    'returns_decomposition',
    'getReturnsDecomposition',
    0.02,
    'returns_decomposition_v1',
    'Daily factor/residual returns',
  ),
  cap('l3_decomposition', 'getL3Decomposition', 0.02, 'l3_decomposition_v1', 'Monthly L3 HR/ER series'),
  cap(
    'batch_analyze',
    'batchAnalyze',
    0.005,
    'batch_analyze_v1',
    'Returns and metrics for up to 100 tickers',
    {
      model: 'per_position',
    },
  ),
  cap('industry_panel', 'getIndustryPanel', 0.02, 'industry_panel_v1', 'Industry beta panel'),
  cap('rankings_screen', 'rankingsScreen', 0.02, 'rankings_screen_v1', 'Cross-sectional rankings screen'),
  cap('rankings', 'getRankings', 0.001, 'rankings_v1', 'Rankings of one ticker'),
  cap('universe_members', 'getUniverseMembers', 0.005, 'universe_members_v1', 'Universe membership'),
  cap(
    'etf_factor_returns',
    'getEtfFactorReturns',
    0.005,
    'etf_factor_returns_v1',
    'Market and sector ETF returns',
  ),
  cap(
    'residual_reversion',
    'residualReversionBasket',
    0.02,
    'residual_reversion_v1',
    'Residual-reversion basket',
  ),
  cap(
    'correlation',
    'getCorrelation',
    0.002,
    'correlation_v1',
    'Macro and style factor correlation of one ticker',
  ),
  // One ticker (`ticker`) costs what GET does; a batch (`tickers`, 2–50) is one price per call.
  cap(
    'correlation_batch',
    'postCorrelation',
    0.002,
    'correlation_v1',
    'Macro and style factor correlation: 0.002 for one ticker, 0.005 per batch call (2–50 tickers)',
    { batchUnitMicros: usd(0.005) },
  ),
  cap('fundamentals', 'getFundamentals', 0.005, 'fundamentals_v1', 'Fundamentals and cost of capital'),
  cap('snapshot', 'snapshot', 0.25, 'snapshot_v1', 'Portfolio or ticker risk snapshot'),
  cap('plaid_holdings', 'getPlaidHoldings', 0.02, 'plaid_holdings_v1', 'Brokerage holdings'),
  // Per 1000 input tokens (unitMicros) and per 1000 output tokens, plus the tools' own prices.
  cap('chat', 'chat', 0.001, 'chat_v1', 'Chat with tools: per 1k input / output tokens plus tool costs', {
    model: 'per_token',
    outputUnitMicros: usd(0.002),
  }),
]

export function capabilityByOperation(operationId: string): Capability | undefined {
  return CAPABILITIES.find((c) => c.operationId === operationId)
}

export function microsToUsd(micros: number): number {
  return micros / 1_000_000
}

export function usdToMicros(value: number): number {
  return Math.round(value * 1_000_000)
}

/**
 * Charge for a call: per_request = unit (the batch price when the call names more than one
 * ticker and the capability has one); per_position = max(unit × positions, minimum) when any
 * succeeded.
 */
export function chargeMicros(c: Capability, positions = 1): number {
  if (c.model !== 'per_position')
    return positions > 1 && c.batchUnitMicros !== null ? c.batchUnitMicros : c.unitMicros
  if (positions <= 0) return 0
  return Math.max(c.unitMicros * positions, c.minChargeMicros ?? 0)
}
