import { type Capability, chargeMicros, microsToUsd } from '../../contract/pricing.ts'
import type { ToolSpec } from '../../contract/tools.ts'
import { AppError } from '../../platform/errors.ts'
import { MIN_TOP_UP_USD } from '../billing/meter.ts'
import { topUpHint } from '../billing/top-up.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'

/**
 * Chat's money (docs/billing "Chat"). Two parts, reserved before the model is called:
 *   - the LLM part, one reservation: maxInput × input price + maxOutput × output price, settled
 *     once to the tokens the provider reported (one ledger row, capability `chat`);
 *   - the tools, one reservation per allowed tool call at the dearest offered tool's price; a slot
 *     is released right before a tool runs, and the tool then reserves and settles its own exact
 *     price on its own metered path (its own ledger row). Unused slots are released at the end.
 * Test keys reserve nothing and are charged nothing (like every metered call).
 */

/** The batch tools take at most this many tickers (POST /batch/*): their dearest possible call. */
const MAX_TOOL_POSITIONS = 100

/**
 * Micro-dollars of `input` and `output` tokens: ⌈(input × in_per_1k + output × out_per_1k) / 1000⌉,
 * computed from the totals in integers (exact at 1 / 2 micro-dollars a token).
 */
export function tokenCostMicros(c: Capability, input: number, output: number): number {
  return Math.ceil((input * c.unitMicros + output * (c.outputUnitMicros ?? 0)) / 1000)
}

/** The most one call of any of `tools` can charge (per-position tools at their largest batch). */
export function dearestToolMicros(tools: readonly ToolSpec[]): number {
  let max = 0
  for (const t of tools) if (t.capability) max = Math.max(max, chargeMicros(t.capability, MAX_TOOL_POSITIONS))
  return max
}

export interface ChatWallet {
  llmReservation: string | null
  llmReservedMicros: number
  /** Tool slots still held. */
  slots: string[]
  slotMicros: number
}

/**
 * Reserves the worst case, all or nothing: on any refusal every reservation made so far is
 * released and the 402 explains the worst case and how to lower it.
 */
export async function reserveChat(
  ctx: ServiceContext,
  p: Principal,
  llmMicros: number,
  toolSlots: number,
  slotMicros: number,
): Promise<ChatWallet> {
  const wallet: ChatWallet = { llmReservation: null, llmReservedMicros: 0, slots: [], slotMicros }
  if (p.environment === 'test') return wallet
  const total = llmMicros + toolSlots * slotMicros
  const refuse = async (r: { balanceMicros: number; availableMicros: number; reason?: string }) => {
    await releaseWallet(ctx, wallet)
    const what =
      r.reason === 'spend_cap'
        ? "would take this month's spending over the account's monthly spend cap"
        : `is more than the available balance of ${microsToUsd(r.availableMicros)} USD`
    return new AppError(
      r.reason === 'spend_cap' ? 'SPEND_CAP_REACHED' : 'INSUFFICIENT_BALANCE',
      `A chat reserves its worst case before the model is called: ${microsToUsd(llmMicros)} USD of tokens ` +
        `(the input budget and max_tokens for each round) plus max_tool_calls (${toolSlots}) × ` +
        `${microsToUsd(slotMicros)} USD (the dearest tool) = ${microsToUsd(total)} USD, which ${what}. ` +
        'Only what is used is charged; lowering max_tool_calls (or max_tokens) lowers the reservation.',
      {
        extra: {
          balance_usd: microsToUsd(r.balanceMicros),
          required_usd: microsToUsd(total),
          ...topUpHint(ctx),
          min_top_up_usd: MIN_TOP_UP_USD,
        },
      },
    )
  }
  const llm = await ctx.accounts.reserve(p.accountId, llmMicros, ctx.now())
  if (!llm.ok) throw await refuse(llm)
  wallet.llmReservation = llm.reservationId
  wallet.llmReservedMicros = llmMicros
  for (let i = 0; i < toolSlots && slotMicros > 0; i++) {
    const r = await ctx.accounts.reserve(p.accountId, slotMicros, ctx.now())
    if (!r.ok) throw await refuse(r)
    wallet.slots.push(r.reservationId)
  }
  return wallet
}

/** Frees one tool slot right before a tool runs (the tool reserves its own price). */
export async function releaseSlot(ctx: ServiceContext, w: ChatWallet): Promise<void> {
  const id = w.slots.pop()
  if (id !== undefined) await ctx.accounts.release(id)
}

/** Frees everything still held (unused slots; the LLM part unless it was settled). */
export async function releaseWallet(ctx: ServiceContext, w: ChatWallet): Promise<void> {
  const ids = [...w.slots, ...(w.llmReservation ? [w.llmReservation] : [])]
  w.slots = []
  w.llmReservation = null
  await Promise.all(ids.map((id) => ctx.accounts.release(id).catch(() => undefined)))
}

/**
 * Settles the LLM part to `micros` (never above the reservation) and releases the tool slots
 * left. Returns what was charged (0 for test keys).
 */
export async function settleChat(
  ctx: ServiceContext,
  w: ChatWallet,
  p: Principal,
  capability: Capability,
  micros: number,
  requestId: string,
): Promise<number> {
  let charged = 0
  if (w.llmReservation !== null) {
    charged = Math.min(micros, w.llmReservedMicros)
    const id = w.llmReservation
    w.llmReservation = null
    await ctx.accounts.settle(
      id,
      { amountMicros: charged, requestId, capability: capability.id, keyId: p.keyId },
      ctx.now(),
    )
  }
  await releaseWallet(ctx, w)
  return charged
}
