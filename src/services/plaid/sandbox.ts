/**
 * The brokerage of test keys: GET /plaid/holdings with a test key never calls Plaid (the operator's
 * credentials, possibly production) nor reads the account's linked items. It answers one simulated
 * item instead, the same for every account and every call of a sandbox build: four stocks of the
 * sandbox market (the first by ticker), one of its ETFs and a cash position, at fixed quantities
 * and prices, so a client sees every kind of position (covered, an ETF, cash) as live keys do.
 */
import type { AccountSubtype, AccountType } from 'plaid'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import type { ItemHoldings } from './holdings.ts'

/** The simulated item's ids and name: what a client can tell the sandbox by. */
const SANDBOX_ITEM = {
  id: 'pli_sandbox',
  itemId: 'sandbox',
  institutionId: null,
  institutionName: 'erm3 sandbox brokerage (simulated holdings, test keys)',
} as const

const ACCOUNT_ID = 'sandbox-brokerage'
/** Quantity and price of the stocks, in ticker order. */
const STOCKS = [
  { quantity: 10, price: 150 },
  { quantity: 20, price: 100 },
  { quantity: 30, price: 75 },
  { quantity: 40, price: 50 },
] as const
const ETF = { quantity: 5, price: 400 }
const CASH = 1000

/** The current ticker of each symbol of one kind, sorted. */
function tickersOf(store: ModelStore, kind: 'stock' | 'etf'): string[] {
  return store.symbols
    .filter((s) => s.asset_type === kind)
    .flatMap((s) => s.tickers.filter((w) => w.to === null).map((w) => w.ticker))
    .sort()
}

export function sandboxHoldings(store: ModelStore): ItemHoldings {
  const stocks = tickersOf(store, 'stock').slice(0, STOCKS.length)
  const etf = tickersOf(store, 'etf')[0]
  const positions = [
    ...stocks.map((ticker, i) => ({ ticker, type: 'equity', ...(STOCKS[i] as (typeof STOCKS)[number]) })),
    ...(etf ? [{ ticker: etf, type: 'etf', ...ETF }] : []),
  ]
  const value = (x: { quantity: number; price: number }) => x.quantity * x.price
  const invested = positions.reduce((a, x) => a + value(x), 0)
  return {
    item: SANDBOX_ITEM,
    error: null,
    accounts: [
      {
        account_id: ACCOUNT_ID,
        name: 'Sandbox brokerage',
        official_name: null,
        mask: '0000',
        // The SDK's enum values, spelled out (the SDK itself is loaded on first use).
        type: 'investment' as AccountType.Investment,
        subtype: 'brokerage' as AccountSubtype.Brokerage,
        balances: { current: invested + CASH, available: CASH, iso_currency_code: 'USD' },
      },
    ],
    securities: [
      ...positions.map((x) => ({
        security_id: `sandbox-${x.ticker}`,
        name: `${x.ticker} (sandbox)`,
        ticker_symbol: x.ticker,
        type: x.type,
        is_cash_equivalent: false,
        close_price: x.price,
        iso_currency_code: 'USD',
      })),
      {
        security_id: 'sandbox-cash',
        name: 'U S Dollar',
        ticker_symbol: 'CUR:USD',
        type: 'cash',
        is_cash_equivalent: true,
        close_price: 1,
        iso_currency_code: 'USD',
      },
    ],
    holdings: [
      ...positions.map((x) => ({ ticker: x.ticker, quantity: x.quantity, price: x.price })),
      { ticker: 'cash', quantity: CASH, price: 1 },
    ].map((x) => ({
      account_id: ACCOUNT_ID,
      security_id: `sandbox-${x.ticker}`,
      quantity: x.quantity,
      institution_price: x.price,
      institution_value: value(x),
      cost_basis: null,
      iso_currency_code: 'USD',
      unofficial_currency_code: null,
    })),
  }
}
