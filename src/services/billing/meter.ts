import { getBillingDocs } from '../../contract/ops/docs.ts'
import { type Capability, chargeMicros, microsToUsd } from '../../contract/pricing.ts'
import { AppError } from '../../platform/errors.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'

export const MIN_TOP_UP_USD = 10

/** A metered call in flight: what was reserved for it (nothing for test keys). */
export interface MeterTicket {
  principal: Principal
  capability: Capability
  reservationId: string | null
  reservedMicros: number
}

/**
 * Reserve-then-settle (DECISIONS.md "Money"): the most a call can cost is reserved before any
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
  const r = await ctx.accounts.reserve(principal.accountId, amount, ctx.now())
  if (!r.ok) {
    throw new AppError(
      'INSUFFICIENT_BALANCE',
      `This call costs ${microsToUsd(amount)} USD; the available balance is ${microsToUsd(r.availableMicros)} USD`,
      {
        extra: {
          balance_usd: microsToUsd(r.balanceMicros),
          required_usd: microsToUsd(amount),
          top_up_url: ctx.config.topUpUrl ?? `${ctx.config.publicUrl}${getBillingDocs.path}`,
          min_top_up_usd: MIN_TOP_UP_USD,
        },
      },
    )
  }
  return { principal, capability, reservationId: r.reservationId, reservedMicros: amount }
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
): Promise<number> {
  if (ticket.reservationId === null) return 0
  const amount = Math.min(chargeMicros(ticket.capability, positionsSucceeded), ticket.reservedMicros)
  await ctx.accounts.settle(
    ticket.reservationId,
    { amountMicros: amount, requestId, capability: ticket.capability.id, keyId: ticket.principal.keyId },
    ctx.now(),
  )
  return amount
}

/** A failed call costs nothing: frees its reservation. */
export async function releaseMetered(ctx: ServiceContext, ticket: MeterTicket): Promise<void> {
  if (ticket.reservationId !== null) await ctx.accounts.release(ticket.reservationId)
}
