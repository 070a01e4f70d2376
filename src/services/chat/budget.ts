import { type Capability, microsToUsd } from '../../contract/pricing.ts'
import { AppError } from '../../platform/errors.ts'
import { MIN_TOP_UP_USD } from '../billing/meter.ts'
import { topUpHint } from '../billing/top-up.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'

/**
 * Chat's money (docs/billing "Chat"), reserved as it is needed rather than for a worst case:
 *   - the LLM part, one reservation before the model is called: maxInput × input price + rounds ×
 *     max_tokens × output price, settled once to the tokens the provider reported (one ledger row,
 *     capability `chat`);
 *   - each tool call reserves and settles its own exact price on its own metered path (its own
 *     ledger row) right before it runs, as the REST call it is. When the balance cannot cover the
 *     next call, that call is refused (402, nothing run) and no further tool runs in the chat.
 * Test keys reserve nothing and are charged nothing (like every metered call).
 */

/**
 * Micro-dollars of `input` and `output` tokens: ⌈(input × in_per_1k + output × out_per_1k) / 1000⌉,
 * computed from the totals in integers (exact at 1 / 2 micro-dollars a token).
 */
export function tokenCostMicros(c: Capability, input: number, output: number): number {
  return Math.ceil((input * c.unitMicros + output * (c.outputUnitMicros ?? 0)) / 1000)
}

export interface ChatWallet {
  llmReservation: string | null
  llmReservedMicros: number
}

/**
 * Reserves the LLM part; refused, the 402 says what it is and how to lower it. The tools are
 * not reserved here: each reserves its own price when it runs.
 */
export async function reserveChat(ctx: ServiceContext, p: Principal, llmMicros: number): Promise<ChatWallet> {
  const wallet: ChatWallet = { llmReservation: null, llmReservedMicros: 0 }
  if (p.environment === 'test') return wallet
  const llm = await ctx.accounts.reserve(p.accountId, llmMicros, ctx.now())
  if (!llm.ok) {
    const what =
      llm.reason === 'spend_cap'
        ? "would take this month's spending over the account's monthly spend cap"
        : `is more than the available balance of ${microsToUsd(llm.availableMicros)} USD`
    throw new AppError(
      llm.reason === 'spend_cap' ? 'SPEND_CAP_REACHED' : 'INSUFFICIENT_BALANCE',
      `A chat reserves its tokens before the model is called: ${microsToUsd(llmMicros)} USD ` +
        `(the input budget and max_tokens for each of max_tool_calls + 1 rounds), which ${what}. ` +
        'Only what is used is charged, and each tool call is paid when it runs; lowering max_tool_calls (or max_tokens) lowers the reservation.',
      {
        extra: {
          balance_usd: microsToUsd(llm.balanceMicros),
          required_usd: microsToUsd(llmMicros),
          ...topUpHint(ctx),
          min_top_up_usd: MIN_TOP_UP_USD,
        },
      },
    )
  }
  wallet.llmReservation = llm.reservationId
  wallet.llmReservedMicros = llmMicros
  return wallet
}

/** Frees the LLM part unless it was settled. */
export async function releaseWallet(ctx: ServiceContext, w: ChatWallet): Promise<void> {
  const id = w.llmReservation
  w.llmReservation = null
  if (id) await ctx.accounts.release(id).catch(() => undefined)
}

/**
 * Settles the LLM part to `micros` (never above the reservation). Returns what was charged (0 for test keys).
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
