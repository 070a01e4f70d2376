import { type Capability, chargeMicros, microsToUsd } from '../../contract/pricing.ts'
import { AppError } from '../../platform/errors.ts'
import type { PaidRequest } from '../../store/accounts/types.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'
import { topUpHint } from './top-up.ts'

export const MIN_TOP_UP_USD = 10

/** A metered call is settled or released by the process that reserved it: in-process reservations. */
const reservations = (ctx: ServiceContext) => ctx.accounts.inProcess ?? ctx.accounts

/** A metered call in flight: what was reserved for it (nothing for test keys). */
export interface MeterTicket {
  principal: Principal
  capability: Capability
  reservationId: string | null
  reservedMicros: number
}

/**
 * Reserve-then-settle (docs/decisions/money.md): the most a call can cost is reserved before any
 * work, so concurrent calls can never take the balance below zero. Test keys never touch money.
 */
export async function beginMetered(
  ctx: ServiceContext,
  principal: Principal,
  capability: Capability,
  positions = 1,
): Promise<MeterTicket> {
  const amount = chargeMicros(capability, positions)
  if (principal.environment === 'test' || amount === 0) {
    return { principal, capability, reservationId: null, reservedMicros: 0 }
  }
  const r = await reservations(ctx).reserve(principal.accountId, amount, ctx.now())
  if (!r.ok && r.reason === 'spend_cap')
    throw spendCapError(ctx, amount, r.capMicros ?? 0, r.monthSpentMicros ?? 0)
  if (!r.ok) {
    throw new AppError(
      'INSUFFICIENT_BALANCE',
      `This call costs ${microsToUsd(amount)} USD; the available balance is ${microsToUsd(r.availableMicros)} USD`,
      {
        extra: {
          balance_usd: microsToUsd(r.balanceMicros),
          required_usd: microsToUsd(amount),
          ...topUpHint(ctx),
          min_top_up_usd: MIN_TOP_UP_USD,
        },
      },
    )
  }
  return { principal, capability, reservationId: r.reservationId, reservedMicros: amount }
}

/** The 402 of a call that would take this UTC month's spending over the account's cap. */
function spendCapError(
  ctx: ServiceContext,
  amount: number,
  capMicros: number,
  spentMicros: number,
): AppError {
  const now = new Date(ctx.now())
  const resetsAt = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString()
  return new AppError(
    'SPEND_CAP_REACHED',
    `This call costs ${microsToUsd(amount)} USD, which would take this month's spending ` +
      `(${microsToUsd(spentMicros)} USD settled, plus calls in flight) over the account's monthly spend cap of ` +
      `${microsToUsd(capMicros)} USD. Raise or remove the cap (PUT /account/settings, signed in) or wait ` +
      `until it resets at ${resetsAt}.`,
    {
      extra: {
        spend_cap_usd: microsToUsd(capMicros),
        month_spent_usd: microsToUsd(spentMicros),
        required_usd: microsToUsd(amount),
        resets_at: resetsAt,
        settings_url: `${ctx.config.publicUrl}/account/settings`,
      },
    },
  )
}

/**
 * Charges for the positions that succeeded and resolves once the debit is durable — the
 * response must not leave before. Returns the micro-dollars charged (0 for test keys).
 */
export async function settleMetered(
  ctx: ServiceContext,
  ticket: MeterTicket,
  requestId: string,
  positionsSucceeded = 1,
  /** The request paid for, recorded with the debit (metered-call.ts, "pay once"). */
  paid: PaidRequest | null = null,
): Promise<number> {
  if (ticket.reservationId === null) return 0
  const amount = settleAmount(ticket, positionsSucceeded)
  await reservations(ctx).settle(
    ticket.reservationId,
    {
      amountMicros: amount,
      requestId,
      capability: ticket.capability.id,
      keyId: ticket.principal.keyId,
      ...(paid ? { paid } : {}),
    },
    ctx.now(),
  )
  return amount
}

/** What settling the ticket for these positions charges (0 for test keys). */
export function settleAmount(ticket: MeterTicket, positionsSucceeded = 1): number {
  if (ticket.reservationId === null) return 0
  return Math.min(chargeMicros(ticket.capability, positionsSucceeded), ticket.reservedMicros)
}

/** A failed call costs nothing: frees its reservation. */
export async function releaseMetered(ctx: ServiceContext, ticket: MeterTicket): Promise<void> {
  if (ticket.reservationId !== null) await reservations(ctx).release(ticket.reservationId)
}
