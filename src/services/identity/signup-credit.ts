import type { ServiceContext } from '../context.ts'

/** The ledger reference of the sign-up credit: the ledger's (account, reference) uniqueness makes it once. */
const SIGNUP_CREDIT_REFERENCE = 'signup-credit'

/**
 * Grants the operator's sign-up credit (ERM3_SIGNUP_CREDIT_USD) to an account a sign-in just
 * created: a `credit` ledger entry with reference `signup-credit`. The store's credit is idempotent
 * per (account, reference), so retries and two sign-ins racing to create one account add it once.
 * Returns the micro-dollars granted by this call (0: none configured, or granted before).
 */
export async function grantSignupCredit(
  ctx: Pick<ServiceContext, 'accounts' | 'config' | 'now'>,
  accountId: string,
): Promise<number> {
  const micros = ctx.config.signupCreditMicros
  if (micros <= 0) return 0
  const r = await ctx.accounts.credit(
    accountId,
    { kind: 'credit', amountMicros: micros, reference: SIGNUP_CREDIT_REFERENCE, note: 'sign-up credit' },
    ctx.now(),
  )
  return r.duplicate ? 0 : micros
}
