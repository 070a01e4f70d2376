import { openApiPath } from '../../contract/operation.ts'
import { OPERATIONS, operationById } from '../../contract/operations.ts'
import { CAPABILITIES, type Capability, chargeMicros, microsToUsd } from '../../contract/pricing.ts'
import type { BalanceView, LedgerEntry } from '../../store/accounts/types.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'
import { KEY_RULES, MAX_CONCURRENT } from '../limits.ts'
import { MIN_TOP_UP_USD } from './meter.ts'

/** Capabilities whose operation this server actually exposes (nothing is priced that does not exist). */
export function servedCapabilities(): Capability[] {
  return CAPABILITIES.filter((c) => operationById(c.operationId))
}

/**
 * How old a balance `GET /balance` may show: this process's own debits and top-ups show at once,
 * changes made by another node or the operator CLI within this (the store's snapshots).
 */
export const BALANCE_VIEW_MAX_AGE_MS = 1000

/** The cheapest call this server sells: `can_make_requests` means the balance covers it. */
let cheapestMicros: number | null = null

export async function balanceView(ctx: ServiceContext, p: Principal) {
  return balanceBody(p, await ctx.accounts.balance(p.accountId, BALANCE_VIEW_MAX_AGE_MS))
}

function balanceBody(p: Principal, b: BalanceView) {
  const rule = KEY_RULES[p.tier]
  const limits = { requests_per_minute: rule.limit, burst: rule.burst, max_concurrent: MAX_CONCURRENT }
  if (p.environment === 'test') {
    return {
      account_id: p.accountId,
      balance_usd: microsToUsd(b.balanceMicros),
      currency: 'USD' as const,
      environment: 'test' as const,
      status: { can_make_requests: true, billing: 'sandbox' },
      limits,
    }
  }
  cheapestMicros ??= Math.min(...servedCapabilities().map((c) => chargeMicros(c)))
  const cheapest = cheapestMicros
  return {
    account_id: p.accountId,
    balance_usd: microsToUsd(b.balanceMicros),
    currency: 'USD' as const,
    environment: 'live' as const,
    status: { can_make_requests: b.balanceMicros - b.reservedMicros >= cheapest, billing: 'prepaid' },
    limits,
  }
}

export type InvoicePeriod = 'month' | 'quarter' | 'year' | 'all'

/** [from, to) of the current calendar period in UTC. */
function periodRange(period: InvoicePeriod, now: number): { from: number; to: number } {
  const d = new Date(now)
  const y = d.getUTCFullYear()
  const m = d.getUTCMonth()
  const to = Date.UTC(y, m + 1, 1)
  if (period === 'all') return { from: 0, to: Number.MAX_SAFE_INTEGER }
  if (period === 'year') return { from: Date.UTC(y, 0, 1), to: Date.UTC(y + 1, 0, 1) }
  if (period === 'quarter') {
    const q = Math.floor(m / 3) * 3
    return { from: Date.UTC(y, q, 1), to: Date.UTC(y, q + 3, 1) }
  }
  return { from: Date.UTC(y, m, 1), to }
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)

export async function invoicesView(ctx: ServiceContext, p: Principal, period: InvoicePeriod, limit: number) {
  const now = ctx.now()
  const range = periodRange(period, now)
  const [summary, rows] = await Promise.all([
    ctx.accounts.summary(p.accountId, range),
    ctx.accounts.entries(p.accountId, { ...range, limit: limit + 1 }),
  ])
  const shown = rows.slice(0, limit)
  return {
    account_id: p.accountId,
    summary: {
      period,
      from: period === 'all' ? null : isoDay(range.from),
      to: isoDay(Math.min(range.to, now + 86_400_000) - 1),
      spent_usd: microsToUsd(summary.spentMicros),
      requests: summary.requests,
      top_ups_usd: microsToUsd(summary.topUpsMicros),
    },
    invoices: shown.map((e: LedgerEntry) => ({
      id: e.id,
      kind: e.kind,
      amount_usd: microsToUsd(e.amountMicros),
      capability: e.capability,
      request_id: e.requestId,
      reference: e.reference,
      created_at: new Date(e.createdAt).toISOString(),
    })),
    truncated: rows.length > limit,
  }
}

const FREE_OPERATIONS = ['getTickers', 'getBalance', 'getInvoices', 'getHealth', 'getPricing', 'estimate']

export function pricingView() {
  return {
    currency: 'USD' as const,
    cached_responses_free: true,
    min_top_up_usd: MIN_TOP_UP_USD,
    capabilities: servedCapabilities().map((c) => {
      const op = operationById(c.operationId) as NonNullable<ReturnType<typeof operationById>>
      return {
        capability_id: c.id,
        method: op.method,
        path: openApiPath(op.path),
        model: c.model,
        cost_usd: microsToUsd(c.unitMicros),
        min_charge: c.minChargeMicros === null ? null : microsToUsd(c.minChargeMicros),
        ...(c.batchUnitMicros !== null ? { batch_cost_usd: microsToUsd(c.batchUnitMicros) } : {}),
        billing_code: c.billingCode,
        tier: c.tier,
        description: c.description,
        ...(c.model === 'per_token'
          ? {
              input_cost_per_1k_tokens_usd: microsToUsd(c.unitMicros),
              output_cost_per_1k_tokens_usd: microsToUsd(c.outputUnitMicros ?? 0),
            }
          : {}),
      }
    }),
    free: OPERATIONS.filter((o) => FREE_OPERATIONS.includes(o.id)).map(
      (o) => `${o.method} ${openApiPath(o.path)}`,
    ),
  }
}
