/**
 * GET /plaid/holdings (0.02 USD per call): the holdings of every brokerage connection of
 * the key's account, from Plaid /investments/holdings/get, each position joined with its erm3 risk
 * (the fields of GET /metrics/{ticker}, from the same service function) and the portfolio snapshot
 * (services/analytics/snapshot, not the metered route) of the covered positions weighted by institution_value.
 *
 * Holdings are live brokerage data: the route never serves them from the response cache.
 */
import type { Holding, InvestmentAccount, Security } from 'plaid'
import { MAX_SNAPSHOT_POSITIONS } from '../../contract/ops/snapshot.ts'
import { AppError } from '../../platform/errors.ts'
import type { PlaidItemRecord } from '../../store/accounts/plaid-types.ts'
import { metricsSnapshot } from '../analytics/metrics.ts'
import { snapshotService } from '../analytics/snapshot/index.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'
import { EMPTY_ITEM_CODES, plaidClient, plaidConfig, plaidError, plaidFailure } from './client.ts'
import { accessToken } from './items.ts'
import { sandboxHoldings } from './sandbox.ts'

/**
 * Checked before any charge: Plaid configured, and a signed-up account (provision-free accounts
 * have no web login, so nothing to link brokerage accounts with).
 */
export async function requireHoldingsAccount(ctx: ServiceContext, p: Principal): Promise<void> {
  plaidConfig(ctx)
  const account = await ctx.accounts.getAccount(p.accountId)
  if (!account || account.kind === 'anonymous' || account.email === null)
    throw new AppError(
      'ACCOUNT_REQUIRED',
      'Brokerage holdings need a signed-up account: this key belongs to an anonymous account (POST /auth/provision-free). ' +
        'Sign up in the dashboard (or POST /auth/provision with a session), link a brokerage there and use a key of that account',
    )
}

/** The account's linked items; none is a 404 (inside the metered call, so it is released: free). */
async function linkedItems(ctx: ServiceContext, p: Principal): Promise<PlaidItemRecord[]> {
  const items = await ctx.accounts.plaid().listItems(p.accountId)
  if (items.length === 0)
    throw new AppError(
      'NOT_FOUND',
      'No brokerage account is linked to this account: link one in the dashboard (Plaid Link, via POST /plaid/link-token and POST /plaid/exchange)',
    )
  return items
}

/** The parts of Plaid's holdings answer this service reads (Plaid's own objects, or the sandbox's). */
export interface ItemHoldings {
  item: Pick<PlaidItemRecord, 'id' | 'itemId' | 'institutionId' | 'institutionName'>
  error: string | null
  accounts: (Pick<
    InvestmentAccount,
    'account_id' | 'name' | 'official_name' | 'mask' | 'type' | 'subtype'
  > & {
    balances: Pick<InvestmentAccount['balances'], 'current' | 'available' | 'iso_currency_code'>
  })[]
  holdings: Pick<
    Holding,
    | 'account_id'
    | 'security_id'
    | 'quantity'
    | 'institution_price'
    | 'institution_value'
    | 'cost_basis'
    | 'iso_currency_code'
    | 'unofficial_currency_code'
  >[]
  securities: SecurityFields[]
}

type SecurityFields = Pick<
  Security,
  | 'security_id'
  | 'name'
  | 'ticker_symbol'
  | 'type'
  | 'is_cash_equivalent'
  | 'close_price'
  | 'iso_currency_code'
>

async function fetchItem(ctx: ServiceContext, item: PlaidItemRecord): Promise<ItemHoldings> {
  const token = await accessToken(ctx, item)
  const store = ctx.accounts.plaid()
  try {
    const r = await (await plaidClient(plaidConfig(ctx))).investmentsHoldingsGet({ access_token: token })
    if (item.lastError !== null) await store.setLastError(item.id, null)
    const { accounts, holdings, securities } = r.data
    return { item, error: null, accounts, holdings, securities }
  } catch (err) {
    const code = plaidFailure(err).errorCode
    if (code !== null) await store.setLastError(item.id, code)
    // An item without investment accounts holds nothing to show: not a failure of the call.
    if (code !== null && EMPTY_ITEM_CODES.has(code))
      return { item, error: code, accounts: [], holdings: [], securities: [] }
    throw plaidError(ctx, err, 'the holdings request', item)
  }
}

const COVERED_TYPE = 'equity'

/** Why a position has no erm3 risk, before asking the model; null when the model should be asked. */
function precheck(s: SecurityFields | undefined): string | null {
  if (!s) return 'Plaid did not describe this security'
  if (s.is_cash_equivalent || s.type === 'cash') return 'cash or a cash equivalent: no equity risk model'
  if (s.type !== COVERED_TYPE)
    return `not a common stock (Plaid type ${s.type ?? 'unknown'}): erm3 models US common stocks only`
  if (!s.ticker_symbol) return 'no ticker symbol: the position cannot be matched to the erm3 universe'
  if (s.iso_currency_code && s.iso_currency_code !== 'USD')
    return `listed in ${s.iso_currency_code}: erm3 models US-dollar listings only`
  return null
}

type Risk = Omit<Awaited<ReturnType<typeof metricsSnapshot>>['body'], '_metadata'>

async function riskOf(
  ctx: ServiceContext,
  p: Principal,
  ticker: string,
): Promise<{ risk: Risk | null; reason: string | null }> {
  try {
    const { _metadata, ...risk } = (await metricsSnapshot(ctx.models, p.environment, ticker)).body
    // Plaid calls some funds `equity`; erm3 knows which of its symbols are ETFs.
    if (risk.meta.asset_type === 'etf')
      return { risk: null, reason: `${ticker} is an ETF in the erm3 universe: no stock-level risk model` }
    return { risk, reason: null }
  } catch (err) {
    if (err instanceof AppError && (err.code === 'TICKER_NOT_FOUND' || err.code === 'INVALID_TICKER'))
      return { risk: null, reason: `ticker ${ticker} is not in the erm3 universe` }
    throw err
  }
}

const balancesOf = (a: ItemHoldings['accounts'][number]) => ({
  current: a.balances.current ?? null,
  available: a.balances.available ?? null,
  iso_currency_code: a.balances.iso_currency_code ?? null,
})

export async function holdingsService(ctx: ServiceContext, p: Principal) {
  // A test key never reaches Plaid (nor the account's real brokerage): simulated holdings instead.
  const fetched =
    p.environment === 'test'
      ? [sandboxHoldings(ctx.models.store('test'))]
      : await Promise.all((await linkedItems(ctx, p)).map((i) => fetchItem(ctx, i)))
  const securities = new Map<string, SecurityFields>()
  for (const f of fetched) for (const s of f.securities) securities.set(s.security_id, s)
  const risks = new Map<string, Promise<{ risk: Risk | null; reason: string | null }>>()
  const positions = await Promise.all(
    fetched.flatMap((f) =>
      f.holdings.map(async (h) => {
        const s = securities.get(h.security_id)
        const ticker = s?.ticker_symbol?.trim().toUpperCase() ?? null
        const pre = precheck(s)
        let joined: { risk: Risk | null; reason: string | null } = { risk: null, reason: pre }
        if (pre === null && ticker) {
          if (!risks.has(ticker)) risks.set(ticker, riskOf(ctx, p, ticker))
          joined = await (risks.get(ticker) as Promise<typeof joined>)
        }
        return {
          item_id: f.item.id,
          account_id: h.account_id,
          security_id: h.security_id,
          ticker,
          name: s?.name ?? null,
          security_type: s?.type ?? null,
          quantity: h.quantity,
          institution_price: h.institution_price,
          institution_value: h.institution_value,
          cost_basis: h.cost_basis ?? null,
          currency: h.iso_currency_code ?? h.unofficial_currency_code ?? null,
          risk: joined.risk,
          risk_unavailable_reason: joined.reason,
        }
      }),
    ),
  )
  const store = ctx.models.store(p.environment)
  const { snapshot, reason } = await bookSnapshot(ctx, p, positions)
  const body = {
    items: fetched.map((f) => ({
      id: f.item.id,
      plaid_item_id: f.item.itemId,
      institution_id: f.item.institutionId,
      institution_name: f.item.institutionName,
      error: f.error,
      accounts: f.accounts.map((a) => ({
        account_id: a.account_id,
        name: a.name,
        official_name: a.official_name ?? null,
        mask: a.mask ?? null,
        type: String(a.type),
        subtype: a.subtype === null || a.subtype === undefined ? null : String(a.subtype),
        balances: balancesOf(a),
      })),
    })),
    securities: [...securities.values()].map((s) => ({
      security_id: s.security_id,
      name: s.name ?? null,
      ticker_symbol: s.ticker_symbol ?? null,
      type: s.type ?? null,
      is_cash_equivalent: s.is_cash_equivalent ?? null,
      close_price: s.close_price ?? null,
      iso_currency_code: s.iso_currency_code ?? null,
    })),
    positions,
    covered_count: positions.filter((x) => x.risk !== null).length,
    snapshot,
    snapshot_unavailable_reason: reason,
    _metadata: ctx.models.metadata(store),
  }
  // How much of the book (by positive institution_value) the risk figures cover.
  const long = positions.filter((x) => x.institution_value > 0)
  const total = long.reduce((a, x) => a + x.institution_value, 0)
  const covered = long.filter((x) => x.risk !== null).reduce((a, x) => a + x.institution_value, 0)
  const coverage = total > 0 ? covered / total : 0
  return { body, store, confidence: { overall: coverage, factors: { value_covered: coverage } } }
}

/** The snapshot of the covered long positions, by institution_value (same ticker summed). */
async function bookSnapshot(
  ctx: ServiceContext,
  p: Principal,
  positions: { ticker: string | null; risk: unknown; institution_value: number }[],
) {
  const value = new Map<string, number>()
  for (const x of positions)
    if (x.risk !== null && x.ticker && x.institution_value > 0)
      value.set(x.ticker, (value.get(x.ticker) ?? 0) + x.institution_value)
  if (value.size === 0)
    return { snapshot: null, reason: 'no position with a positive value is covered by the erm3 model' }
  const book = [...value.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, MAX_SNAPSHOT_POSITIONS)
    .map(([ticker, weight]) => ({ ticker, weight }))
  try {
    const r = await snapshotService(ctx.models, p.environment, { type: 'portfolio', portfolio: book })
    const { _metadata, ...snapshot } = r.body
    if (value.size > book.length)
      snapshot.snapshot.warnings.push(
        `the snapshot holds the ${book.length} largest covered positions of ${value.size}`,
      )
    return { snapshot, reason: null }
  } catch (err) {
    if (err instanceof AppError && err.code !== 'INTERNAL') return { snapshot: null, reason: err.message }
    throw err
  }
}
