import type { LlmConfig } from '../../platform/config.ts'
import { AppError } from '../../platform/errors.ts'
import type { RateRule } from '../../store/limits/types.ts'
import type { ServiceContext } from '../context.ts'
import type { Principal } from '../identity/keys.ts'

/**
 * Per-key chat limits, on top of the key's general rate limit: ERM3_CHAT_RPM chats and
 * ERM3_CHAT_TPM tokens a minute. Tokens are counted in thousands (GCRA ticks stay exact) and known
 * only after the chat: a chat is admitted while the key's token bucket is not empty, and its
 * tokens are taken once the provider has reported them (draining the bucket at most, so the next
 * chat waits). Test keys chat for free (with the sandbox model, sandbox.ts), so their token limit is
 * stricter: at most 20k a minute.
 */
const TEST_KEY_TPM = 20_000

function rules(cfg: LlmConfig, p: Principal): { requests: RateRule; kilotokens: RateRule } {
  const tpm = p.environment === 'test' ? Math.min(cfg.tokensPerMinute, TEST_KEY_TPM) : cfg.tokensPerMinute
  const k = Math.max(1, Math.ceil(tpm / 1000))
  return {
    requests: { limit: cfg.requestsPerMinute, periodMs: 60_000, burst: cfg.requestsPerMinute },
    kilotokens: { limit: k, periodMs: 60_000, burst: k },
  }
}

function refused(detail: string, retryAfterMs: number): AppError {
  return new AppError('RATE_LIMITED', detail, {
    retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)),
  })
}

/** Admits one chat of key `p` or throws RATE_LIMITED with its Retry-After. */
export async function admitChat(ctx: ServiceContext, cfg: LlmConfig, p: Principal): Promise<void> {
  const r = rules(cfg, p)
  const tokens = await ctx.limits.rate.take(`chat:tok:${p.keyId}`, r.kilotokens, ctx.now(), 1)
  if (!tokens.allowed)
    throw refused(
      `Chat token limit of ${r.kilotokens.limit * 1000} tokens per minute per key reached`,
      tokens.retryAfterMs,
    )
  const reqs = await ctx.limits.rate.take(`chat:req:${p.keyId}`, r.requests, ctx.now(), 1)
  if (!reqs.allowed)
    throw refused(`Chat limit of ${r.requests.limit} chats per minute per key reached`, reqs.retryAfterMs)
}

/** Takes the tokens a finished chat used from its key's bucket (the admission took 1k already). */
export async function chargeTokens(
  ctx: ServiceContext,
  cfg: LlmConfig,
  p: Principal,
  tokens: number,
): Promise<void> {
  const rule = rules(cfg, p).kilotokens
  const bucket = `chat:tok:${p.keyId}`
  let left = Math.ceil(tokens / 1000) - 1
  while (left > 0) {
    const cost = Math.min(left, rule.burst)
    const d = await ctx.limits.rate.take(bucket, rule, ctx.now(), cost)
    if (d.allowed) {
      left -= cost
      continue
    }
    // Fewer left than used: empty the bucket and stop (the rest is forgiven, not carried).
    if (d.remaining <= 0) return
    const rest = await ctx.limits.rate.take(bucket, rule, ctx.now(), Math.min(d.remaining, left))
    if (!rest.allowed) return
    left -= Math.min(d.remaining, left)
  }
}
