import { BACKEND_PAIRS } from '../helpers/test-app.ts'
import { type SecurityCase, securitySuite } from './security-suite.ts'

/** Every authenticated operation so far; later routes add their case here. */
const CASES: SecurityCase[] = [
  { op: 'getBalance', input: {}, metered: false },
  {
    op: 'getInvoices',
    input: { query: { period: 'month' } },
    metered: false,
    invalid: { query: { period: 'decade' as 'month' } },
  },
  {
    op: 'getMetrics',
    input: { params: { ticker: 'SPY' } },
    metered: true,
    invalid: { params: { ticker: 'NO SUCH!' } },
  },
  {
    op: 'decompose',
    input: { body: { ticker: 'SPY' } },
    metered: true,
    invalid: { body: { ticker: 'SPY', extra: 1 } },
  },
  { op: 'decomposeV4', input: { body: { ticker: 'SPY' } }, metered: true, invalid: { body: {} } },
  {
    op: 'getTickerReturns',
    input: { query: { ticker: 'SPY', years: 1 } },
    metered: true,
    invalid: { query: { ticker: 'SPY', years: 16 } },
  },
  {
    op: 'getEtfReturns',
    input: { query: { ticker: 'SPY' } },
    metered: true,
    invalid: { query: { ticker: 'SPY', years: 16 } },
  },
  { op: 'getTickers', input: { query: { search: 'S' } }, metered: false, invalid: { query: { limit: 0 } } },
  {
    op: 'getLstar',
    input: { query: { ticker: 'SPY', years: 1 } },
    metered: true,
    invalid: { query: { ticker: 'SPY', threshold: 0.6 } },
  },
  {
    op: 'getReturnsDecomposition',
    input: { query: { ticker: 'SPY' } },
    metered: true,
    invalid: { query: { ticker: 'SPY', years: 16 } },
  },
  {
    op: 'getL3Decomposition',
    input: { query: { ticker: 'SPY' } },
    metered: true,
    invalid: { query: { ticker: 'SPY', years: 0 } },
  },
  {
    op: 'batchLstar',
    input: { body: { tickers: ['SPY'] } },
    metered: true,
    invalid: { body: { tickers: [] } },
  },
  {
    op: 'batchAnalyze',
    input: { body: { tickers: ['SPY'], metrics: ['returns'] } },
    metered: true,
    invalid: { body: { tickers: ['SPY'], metrics: ['prices'] } },
  },
  {
    op: 'getIndustryPanel',
    input: { query: { level: 'sector' } },
    metered: true,
    invalid: { query: { level: 'industry' } },
  },
  {
    op: 'rankingsScreen',
    input: { body: { metric: 'gross_return' } },
    metered: true,
    invalid: { body: { metric: 'alpha' } },
  },
  {
    op: 'getRankings',
    input: { params: { ticker: 'SPY' } },
    metered: true,
    invalid: { params: { ticker: 'NO SUCH!' } },
  },
  {
    op: 'getCorrelation',
    input: { params: { ticker: 'SPY' }, query: { return_type: 'gross' } },
    metered: true,
    invalid: { params: { ticker: 'SPY' }, query: { factors: 'carry' } },
  },
  {
    op: 'postCorrelation',
    input: { body: { ticker: 'SPY', return_type: 'gross' } },
    metered: true,
    invalid: { body: { tickers: ['SPY'] } },
  },
  {
    op: 'getUniverseMembers',
    input: { params: { universe: 'uni_mc_50' } },
    metered: true,
    invalid: { params: { universe: 'uni_mc_42' } },
  },
  {
    op: 'getEtfFactorReturns',
    input: { query: { tickers: 'SPY' } },
    metered: true,
    invalid: { query: { tickers: 'QQQ' } },
  },
  {
    op: 'getFundamentals',
    input: { params: { ticker: 'SPY' }, query: { periods: '2' } },
    metered: true,
    invalid: { params: { ticker: 'SPY' }, query: { rf_tenor: '4m' } },
  },
  {
    op: 'snapshot',
    input: { body: { type: 'ticker', ticker: 'AAPL', lookback_days: 60 } },
    metered: true,
    invalid: { body: { type: 'portfolio', portfolio: [{ ticker: 'AAPL', weight: 1, shares: 2 }] } },
  },
  {
    op: 'getBenchmark',
    input: { params: { id: 'bm_etf_spy' } },
    metered: false,
    invalid: { params: { id: '60:SPY,30:XLK' } },
  },
  {
    op: 'residualReversionBasket',
    input: { body: { tickers: ['SPY'] } },
    metered: true,
    invalid: { body: { tickers: [] } },
  },
] as SecurityCase[]

for (const b of BACKEND_PAIRS) securitySuite(b, CASES)
