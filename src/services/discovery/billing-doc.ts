import { openApiPath } from '../../contract/operation.ts'
import { operationById } from '../../contract/operations.ts'
import { microsToUsd } from '../../contract/pricing.ts'
import { MIN_TOP_UP_USD } from '../billing/meter.ts'
import { servedCapabilities } from '../billing/views.ts'
import { CHAT_BILLING_DOC } from '../chat/billing-text.ts'

/**
 * GET /docs/billing: how money works on this instance, from the one pricing table and the real
 * rules of the metering path. It is where a 402's `top_up_url` points unless card top-ups are
 * configured (Stripe: then the checkout endpoint) or the operator set TOP_UP_URL (their own page).
 */
export function billingDoc(opts: { publicUrl: string; topUpUrl: string | null; stripe?: boolean }): string {
  const rows = servedCapabilities().map((c) => {
    const op = operationById(c.operationId)
    const where = op ? `\`${op.method} ${openApiPath(op.path)}\`` : ''
    const unit =
      c.model === 'per_position'
        ? 'per ticker that succeeds'
        : c.model === 'per_token'
          ? `per 1k input tokens, ${microsToUsd(c.outputUnitMicros ?? 0)} per 1k output tokens, plus the tool calls (see Chat)`
          : 'per call'
    const min = c.minChargeMicros
      ? `, minimum ${microsToUsd(c.minChargeMicros)}`
      : c.batchUnitMicros !== null
        ? ` for one ticker, ${microsToUsd(c.batchUnitMicros)} per batch call`
        : ''
    return `| ${c.id} | ${where} | ${microsToUsd(c.unitMicros)} ${unit}${min} |`
  })
  const topUp = opts.stripe
    ? 'Pay by card with Stripe: `POST /billing/checkout {"amount_usd": 25}` with one of your live keys ' +
      '(or a signed-in session) answers a `checkout_url`; open it in a browser and pay. The balance is ' +
      'credited once Stripe confirms the payment (usually within seconds; some payment methods take ' +
      'days), exactly once per payment. At most 10,000.00 USD per payment. A refund or a dispute of a ' +
      'payment debits the balance (`payment_refund`, `chargeback` in `GET /invoices`), which can take it ' +
      'below zero; metered calls then answer 402 until a top-up covers it. A dispute won gives back ' +
      'exactly what its chargeback took.'
    : opts.topUpUrl
      ? `The operator of this instance takes top-ups at ${opts.topUpUrl}.`
      : 'On this instance the operator credits top-ups with the operator CLI: ' +
        '`erm3 topup --account <account_id> --usd <amount> --reference <payment reference>` ' +
        '(idempotent per reference: a repeated reference credits nothing). Ask the operator, giving your ' +
        '`account_id` from `GET /balance`. Card payments (Stripe) are not configured on this instance.'
  return `# Billing

erm3 is prepaid: every account has a balance in US dollars, kept as an append-only ledger in
integer micro-dollars. Base URL: ${opts.publicUrl}

## What is charged
- A paid call reserves the most it can cost before any work (a 402 \`INSUFFICIENT_BALANCE\` if the
  available balance cannot cover it), then is charged once its response is ready; the debit is
  durable before the response leaves.
- Errors cost nothing: a 4xx or 5xx is never charged.
- Repeats are free: an identical request (same account, operation, parameters and \`data_as_of\`)
  answered from the response cache costs 0 (\`_agent.cache_status: HIT\`, \`X-API-Cost-USD: 0\`), and
  so does a 304 to \`If-None-Match\`. \`Cache-Control: no-cache\` skips the response cache and is
  charged (\`BYPASS\`); the answer is always the served build's.
- Batch calls are charged per ticker that succeeds, with the minimum shown.
- Test keys (\`erm_agent_test_…\`) read a sandbox market and never change a balance.
- Every paid JSON response reports its cost in \`_agent.cost_usd\`, every paid response in
  \`X-API-Cost-USD\`; the balance left after the call is in \`_agent.balance_usd\` and
  \`X-Balance-USD\` (the settled balance as the call began, minus its cost).
- An optional monthly spend cap (\`PATCH /account/settings {"spend_cap_usd": …}\`, signed in; \`null\`
  removes it): a paid call that would take the UTC calendar month's spending (settled + in flight + its
  own cost) over the cap answers 402 \`SPEND_CAP_REACHED\`, saying the cap, the month's spending and
  when it resets (the first of next month, 00:00 UTC).

## Prices
| capability | endpoint | USD |
|---|---|---|
${rows.join('\n')}

Free: \`GET /balance\`, \`GET /invoices\`, \`GET /pricing\`, \`POST /estimate\` (the price of any call
before making it), \`GET /tickers\`, \`GET /health\`, the documents and discovery manifests.

## Checking
- \`GET /balance\`: \`balance_usd\` and \`status.can_make_requests\`.
- \`GET /invoices?period=month|quarter|year|all\`: spend, request count and top-ups from the ledger.
- \`GET /account/usage?from=&to=\`: requests, cache hits (free) and cost per UTC day and capability.
- \`GET /account/ledger?from=&to=&format=csv\`: top-ups, credits, refunds and debits grouped per day
  and capability (JSON, CSV or Parquet).
- \`GET /account/keys\`, \`GET /account/audit\`: the account's keys and the log of every change to them
  and to the settings (who, what, when, from which address).

${CHAT_BILLING_DOC}
## Topping up
The minimum top-up is ${MIN_TOP_UP_USD.toFixed(2)} USD. ${topUp}
`
}
