import type { ResponseOf } from '../../contract/client.ts'
import { ApiError, call, dataKey, requireSession } from '../api.ts'
import { el, errorMessage, message, table } from '../dom.ts'

/**
 * The account (its id), balance, Stripe top-up when Stripe is configured (else the operator's
 * command), spend cap, low-balance alert, ledger, invoices.
 */

type Settings = ResponseOf<'getAccountSettings'>

const usd = (x: number) => `${x < 0 ? '−' : ''}$${Math.abs(x).toFixed(x !== 0 && Math.abs(x) < 0.01 ? 4 : 2)}`

function field(id: string, label: string, input: HTMLInputElement, button: string): HTMLFormElement {
  return el(
    'form',
    { id: `${id}-form` },
    el('label', { for: id, text: label }),
    input,
    el('button', { type: 'submit', text: button }),
  )
}

export async function billingPage(root: HTMLElement): Promise<void> {
  const [session, key] = await Promise.all([requireSession(), dataKey()])
  const [balance, settings, alert, ledger, invoices] = await Promise.all([
    call<ResponseOf<'getBalance'>>('/balance', { key }),
    call<Settings>('/account/settings'),
    call<ResponseOf<'getBalanceAlert'>>('/account/balance-alert'),
    call<ResponseOf<'getAccountLedger'>>('/account/ledger'),
    Promise.all(
      (['month', 'quarter', 'year', 'all'] as const).map((period) =>
        call<ResponseOf<'getInvoices'>>(`/invoices?period=${period}`, { key }),
      ),
    ),
  ])
  const status = el('div', { 'aria-live': 'polite' })
  const fail = (e: unknown) => status.replaceChildren(errorMessage(e))
  const accountId = session.data.account_id
  const topup = session.data.features?.card_top_ups
    ? topUpForm(accountId, status, fail)
    : operatorTopUp(accountId)
  const capForm = spendCapForm(settings.data, status, fail)
  const alertForm = balanceAlertForm(alert.data, status, fail)

  const s = settings.data
  root.append(
    el(
      'p',
      { id: 'account' },
      'Account ',
      el('code', { id: 'account-id', text: accountId }),
      ` (${session.data.email})`,
    ),
    el('p', {
      class: 'meta',
      id: 'balance',
      text: `Balance ${usd(balance.data.balance_usd)}${balance.data.status.can_make_requests ? '' : ' (top up to make metered calls)'} · spent this month ${usd(s.month_spent_usd)}${s.spend_cap_usd === null ? '' : ` of a ${usd(s.spend_cap_usd)} cap`} · resets ${s.month_resets_at.slice(0, 10)}`,
    }),
    status,
    topup,
    capForm,
    alertForm,
    el(
      'p',
      {},
      el('a', {
        href: '/account/ledger?format=csv',
        download: 'erm3-ledger.csv',
        text: 'Download the ledger (CSV)',
      }),
    ),
    table(
      ['Date', 'Kind', 'Capability', 'Calls', 'Amount'],
      ledger.data.rows.map((r) => [r.date, r.kind, r.capability, r.count, usd(r.amount_usd)]),
      'Ledger (last 30 days; debits grouped per day and capability)',
    ),
    table(
      ['Period', 'Spent', 'Charged calls', 'Top-ups'],
      invoices.map((i, k) => [
        ['this month', 'this quarter', 'this year', 'all time'][k] as string,
        usd(i.data.summary.spent_usd),
        i.data.summary.requests,
        usd(i.data.summary.top_ups_usd),
      ]),
      'Invoices by period',
    ),
  )
}

/** The operator's command that adds funds to this account (what a top-up is without Stripe). */
const topUpCommand = (accountId: string) => `erm3 topup --account ${accountId} --usd <amount>`

/** Without Stripe: top-ups go through the operator, with the exact command to ask for. */
function operatorTopUp(accountId: string): HTMLElement {
  return el(
    'section',
    { id: 'operator-topup', class: 'card' },
    el('h2', { text: 'Adding funds' }),
    el('p', {
      text: 'Card payments are not configured on this instance. Ask its operator to top up your account (at least 10 USD); they run:',
    }),
    el('pre', { tabindex: 0 }, el('code', { text: topUpCommand(accountId) })),
  )
}

/** Top-up through Stripe Checkout (a 503 if Stripe went away since: the operator's command). */
function topUpForm(accountId: string, status: HTMLElement, fail: (e: unknown) => void): HTMLFormElement {
  const amount = el('input', { id: 'topup', type: 'number', min: 10, max: 10000, step: '0.01', value: 25 })
  const topup = field('topup', 'Top up (USD, at least 10)', amount, 'Pay with Stripe')
  topup.addEventListener('submit', async (ev) => {
    ev.preventDefault()
    try {
      const c = await call<ResponseOf<'createCheckout'>>('/billing/checkout', {
        body: { amount_usd: Number(amount.value) },
      })
      location.assign(c.data.checkout_url)
    } catch (e) {
      if (e instanceof ApiError && e.problem.status === 503)
        status.replaceChildren(
          message(
            `Card payments are not configured on this instance (${e.problem.detail}). Ask its operator to top up your account: ${topUpCommand(accountId)}`,
          ),
        )
      else fail(e)
    }
  })
  return topup
}

/** The monthly spend cap (empty: none). */
function spendCapForm(settings: Settings, status: HTMLElement, fail: (e: unknown) => void): HTMLFormElement {
  const cap = el('input', {
    id: 'cap',
    type: 'number',
    min: 0,
    step: '0.01',
    value: settings.spend_cap_usd ?? '',
  })
  const capForm = field('cap', 'Monthly spend cap (USD; empty = none)', cap, 'Save cap')
  capForm.addEventListener('submit', async (ev) => {
    ev.preventDefault()
    try {
      const s = await call<ResponseOf<'updateAccountSettings'>>('/account/settings', {
        method: 'PATCH',
        body: { spend_cap_usd: cap.value === '' ? null : Number(cap.value) },
      })
      status.replaceChildren(
        message(
          s.data.spend_cap_usd === null
            ? 'No spend cap.'
            : `Cap set to ${usd(s.data.spend_cap_usd)} a month.`,
        ),
      )
    } catch (e) {
      fail(e)
    }
  })
  return capForm
}

/** The low-balance alert's threshold. */
function balanceAlertForm(
  alert: ResponseOf<'getBalanceAlert'>,
  status: HTMLElement,
  fail: (e: unknown) => void,
): HTMLFormElement {
  const threshold = el('input', {
    id: 'threshold',
    type: 'number',
    min: 0,
    step: '0.01',
    value: alert.threshold_usd,
  })
  const alertForm = field('threshold', 'Low-balance alert below (USD)', threshold, 'Save alert')
  alertForm.addEventListener('submit', async (ev) => {
    ev.preventDefault()
    try {
      const a = await call<ResponseOf<'setBalanceAlert'>>('/account/balance-alert', {
        body: { threshold_usd: Number(threshold.value) },
      })
      status.replaceChildren(
        message(`You will be told once when the balance falls below ${usd(a.data.threshold_usd)}.`),
      )
    } catch (e) {
      fail(e)
    }
  })
  return alertForm
}
