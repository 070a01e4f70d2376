import type { ResponseOf } from '../../contract/client.ts'
import { ApiError, call, data } from '../api.ts'
import { el, errorMessage, message, num, rowAction, table } from '../dom.ts'

/**
 * Brokerage connections through Plaid Link: link an account (Link's public token is exchanged
 * server-side; the access token never reaches the page), re-link one Plaid asks to (update mode),
 * unlink, and the holdings with their erm3 risk (GET /plaid/holdings, metered, with this page's
 * data key). Link's script is loaded from cdn.plaid.com when first needed, as Plaid requires; the
 * server's Content-Security-Policy allows it only when Plaid is configured.
 */

const LINK_SCRIPT = 'https://cdn.plaid.com/link/v2/stable/link-initialize.js'

type Item = ResponseOf<'listPlaidItems'>['items'][number]

interface LinkMetadata {
  institution?: { institution_id?: string; name?: string } | null
}

interface LinkHandler {
  open(): void
  destroy(): void
}

interface PlaidLink {
  create(o: {
    token: string
    onSuccess: (publicToken: string, metadata: LinkMetadata) => void
    onExit: (err: { display_message?: string | null; error_message?: string } | null) => void
  }): LinkHandler
}

type Holdings = ResponseOf<'getPlaidHoldings'>

let loading: Promise<PlaidLink> | null = null

/** Plaid Link's script, once per page. */
function plaidLink(): Promise<PlaidLink> {
  const w = window as unknown as { Plaid?: PlaidLink }
  if (w.Plaid) return Promise.resolve(w.Plaid)
  loading ??= new Promise<PlaidLink>((resolve, reject) => {
    const s = el('script', { src: LINK_SCRIPT, async: true })
    s.addEventListener('load', () =>
      w.Plaid ? resolve(w.Plaid) : reject(new Error('Plaid Link loaded without defining Plaid')),
    )
    s.addEventListener('error', () => {
      loading = null
      s.remove()
      reject(new Error('Plaid Link could not be loaded from cdn.plaid.com; try again'))
    })
    document.head.append(s)
  })
  return loading
}

export async function brokeragePage(root: HTMLElement): Promise<void> {
  const out = el('div', { 'aria-live': 'polite', id: 'plaid-status' })
  const fail = (e: unknown) => out.replaceChildren(errorMessage(e))
  const list = el('div', { id: 'plaid-items' })
  const holdings = el('div', { id: 'plaid-holdings' })
  const link = el('button', { type: 'button', id: 'plaid-link', text: 'Link a brokerage account' })
  const show = el('button', {
    type: 'button',
    class: 'secondary',
    id: 'plaid-show-holdings',
    text: 'Show holdings and risk (0.02 USD)',
  })
  const ui: BrokerageUi = { out, fail, list, holdings, show }
  link.addEventListener('click', () => linkAccount(ui).catch(fail))
  show.addEventListener('click', () => showHoldings(ui))

  root.append(
    el('p', {
      text: 'Link an investment account through Plaid to see its positions with their erm3 risk. The Plaid access token is stored encrypted on the server and never shown.',
    }),
    el('div', { class: 'actions' }, link, ' ', show),
    out,
    list,
    holdings,
  )
  try {
    await renderItems(ui)
  } catch (e) {
    if (e instanceof ApiError && e.problem.status === 503) {
      link.disabled = true
      show.disabled = true
      list.replaceChildren(
        message(`Brokerage linking is not available on this server: ${e.problem.detail ?? ''}`),
      )
      return
    }
    throw e
  }
}

/** The page's status line, its two lists and the holdings button, which every part below updates. */
interface BrokerageUi {
  out: HTMLElement
  fail: (e: unknown) => void
  list: HTMLElement
  holdings: HTMLElement
  show: HTMLButtonElement
}

/** Opens Link with a token from the server; resolves when Link reports success or exit. */
async function openLink(
  { out, fail }: BrokerageUi,
  itemId: string | null,
  onSuccess: (pt: string, m: LinkMetadata) => Promise<void>,
) {
  const [token, Plaid] = await Promise.all([
    call<ResponseOf<'createPlaidLinkToken'>>('/plaid/link-token', {
      body: itemId ? { item_id: itemId } : {},
    }),
    plaidLink(),
  ])
  await new Promise<void>((resolve) => {
    const handler = Plaid.create({
      token: token.data.link_token,
      onSuccess: (pt, m) => {
        handler.destroy()
        onSuccess(pt, m).catch(fail).finally(resolve)
      },
      onExit: (err) => {
        handler.destroy()
        if (err)
          out.replaceChildren(message(err.display_message ?? err.error_message ?? 'Link closed', 'error'))
        resolve()
      },
    })
    handler.open()
  })
}

/** The linked accounts, each with its re-link and unlink actions; the holdings button needs one. */
async function renderItems(ui: BrokerageUi): Promise<void> {
  const { out, fail, list, holdings, show } = ui
  const r = await call<ResponseOf<'listPlaidItems'>>('/plaid/items')
  if (r.data.items.length === 0) {
    list.replaceChildren(message('No brokerage account is linked yet.'))
    show.disabled = true
    return
  }
  show.disabled = false
  const t = table(
    ['Institution', 'Linked', 'State', 'Actions'],
    r.data.items.map((i) => [
      i.institution_name ?? i.institution_id ?? i.plaid_item_id,
      i.created_at.slice(0, 10),
      i.last_error === 'ITEM_LOGIN_REQUIRED' ? 'needs re-linking' : i.last_error ? i.last_error : 'connected',
      '',
    ]),
    'Linked brokerage accounts',
  )
  t.querySelectorAll('tbody tr').forEach((tr, n) => {
    const i = r.data.items[n] as Item
    const name = i.institution_name ?? i.plaid_item_id
    const cell = tr.lastElementChild as HTMLElement
    const act = (label: string, fn: () => Promise<void>) =>
      rowAction(cell, label, `${label}: ${name}`, fn, fail)
    act('Re-link', () =>
      openLink(ui, i.id, async () => {
        out.replaceChildren(message(`${name} is re-linked.`))
        await renderItems(ui)
      }),
    )
    act('Unlink', async () => {
      if (!confirm(`Unlink ${name}? erm3 deletes its access token and asks Plaid to remove the connection.`))
        return
      await call(`/plaid/items/${i.id}`, { method: 'DELETE' })
      out.replaceChildren(message(`${name} is unlinked.`))
      holdings.replaceChildren()
      await renderItems(ui)
    })
  })
  list.replaceChildren(t)
}

/** Links a new account: Link's public token is exchanged server-side for the item. */
function linkAccount(ui: BrokerageUi): Promise<void> {
  return openLink(ui, null, async (publicToken, m) => {
    const { out } = ui
    const inst = m.institution ?? null
    const r = await call<ResponseOf<'exchangePlaidPublicToken'>>('/plaid/exchange', {
      body: {
        public_token: publicToken,
        ...(inst?.institution_id ? { institution_id: inst.institution_id } : {}),
        ...(inst?.name ? { institution_name: inst.name } : {}),
      },
    })
    out.replaceChildren(message(`${r.data.institution_name ?? 'The account'} is linked.`))
    await renderItems(ui)
  })
}

/** The linked accounts' holdings with their erm3 risk (GET /plaid/holdings, metered). */
async function showHoldings({ holdings, fail }: BrokerageUi): Promise<void> {
  try {
    const r = await data<Holdings>('/plaid/holdings')
    const rows = r.data.positions.map((p) => [
      p.ticker,
      p.name,
      p.security_type,
      num(p.quantity, 2),
      num(p.institution_value, 2),
      num(p.risk?.metrics.l3_mkt_hr),
      num(p.risk?.metrics.l3_res_er),
      p.risk ? null : p.risk_unavailable_reason,
    ])
    const t = table(
      [
        'Ticker',
        'Name',
        'Type',
        'Quantity',
        'Value',
        'Market hedge (L3)',
        'Residual share (L3)',
        'No risk because',
      ],
      rows,
      `Holdings: ${r.data.covered_count} of ${r.data.positions.length} positions with risk (cost ${r.costUsd ?? 0} USD)`,
    )
    // A wide table scrolls sideways: keyboard users must be able to reach it to scroll.
    t.tabIndex = 0
    holdings.replaceChildren(t)
  } catch (e) {
    fail(e)
  }
}
