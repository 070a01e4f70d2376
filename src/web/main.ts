import './style.css'
import { ApiError, call, signOut } from './api.ts'
import { dataLine, type HealthData } from './data-line.ts'
import { el, errorMessage } from './dom.ts'
import { billingPage } from './pages/billing.ts'
import { brokeragePage } from './pages/brokerage.ts'
import { explorerPage } from './pages/explorer.ts'
import { keysPage } from './pages/keys.ts'
import { portfolioPage } from './pages/portfolio.ts'
import { signInPage } from './pages/signin.ts'
import { usagePage } from './pages/usage.ts'
import { webhooksPage } from './pages/webhooks.ts'

/** The dashboard: hash routes, each a page rendered into <main>; the banner says what the data is. */

type Page = (root: HTMLElement, params: URLSearchParams) => Promise<void>

const PAGES: Record<string, { title: string; page: Page; session: boolean }> = {
  signin: { title: 'Sign in', page: signInPage, session: false },
  explorer: { title: 'Explorer', page: explorerPage, session: true },
  portfolio: { title: 'Portfolio', page: portfolioPage, session: true },
  keys: { title: 'API keys', page: keysPage, session: true },
  billing: { title: 'Balance and billing', page: billingPage, session: true },
  usage: { title: 'Usage', page: usagePage, session: true },
  webhooks: { title: 'Webhooks', page: webhooksPage, session: true },
  brokerage: { title: 'Brokerage accounts', page: brokeragePage, session: true },
}

async function banner(): Promise<void> {
  const b = document.getElementById('banner') as HTMLElement
  try {
    const h = await call<{
      model: {
        data_as_of: string | null
        dataset: { kind: string; seed?: number; sources?: string[] } | null
      }
      data?: HealthData
    }>('/health')
    const d = h.data.model.dataset
    b.className = `${d?.kind === 'synthetic' ? 'banner synthetic' : 'banner'}${h.data.data?.stale ? ' stale' : ''}`
    b.textContent =
      (d?.kind === 'synthetic'
        ? `Synthetic data (seed ${d.seed}): generated series, not market data. Data as of ${h.data.model.data_as_of}.`
        : d?.kind === 'vendor'
          ? `Market data from ${(d.sources ?? []).join(', ')} as of ${h.data.model.data_as_of ?? 'n/a'}.`
          : `Imported data as of ${h.data.model.data_as_of ?? 'n/a'}.`) + dataLine(h.data.data)
  } catch {
    b.textContent = 'The service health could not be read.'
  }
}

async function route(): Promise<void> {
  const [name = 'explorer', query = ''] = location.hash.replace(/^#\/?/, '').split('?')
  const entry = PAGES[name] ?? PAGES.explorer
  const main = document.getElementById('main') as HTMLElement
  main.replaceChildren(el('h1', { text: entry?.title ?? 'erm3' }))
  document.title = `${entry?.title} · erm3 dashboard`
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === `#/${name}`) a.setAttribute('aria-current', 'page')
    else a.removeAttribute('aria-current')
  }
  const root = el('div')
  main.append(root)
  try {
    await entry?.page(root, new URLSearchParams(query))
  } catch (e) {
    if (e instanceof ApiError && e.problem.status === 401 && entry?.session) {
      location.hash = `#/signin?next=${encodeURIComponent(location.hash)}`
      return
    }
    root.append(errorMessage(e))
  }
  main.focus()
}

/** Who is signed in, and the sign-out buttons (or a sign-in link). */
async function who(): Promise<void> {
  const w = document.getElementById('who') as HTMLElement
  try {
    const s = await call<{ email: string; features?: { brokerage: boolean } }>('/auth/session')
    // What the operator did not configure is not offered (Plaid: the Brokerage page).
    const brokerage = document.querySelector<HTMLElement>('nav a[href="#/brokerage"]')
    if (brokerage) brokerage.hidden = s.data.features?.brokerage === false
    const button = (id: string, text: string, everywhere: boolean) => {
      const b = el('button', { type: 'button', class: 'secondary', id, text })
      b.addEventListener('click', async () => {
        await signOut(everywhere)
        location.hash = '#/signin'
        await who()
      })
      return b
    }
    w.replaceChildren(
      `${s.data.email} `,
      button('sign-out', 'Sign out', false),
      ' ',
      button('sign-out-everywhere', 'Sign out everywhere', true),
    )
  } catch {
    w.replaceChildren(el('a', { href: '#/signin', text: 'Sign in' }))
  }
}

window.addEventListener('hashchange', () => void route())
void banner()
void who()
void route()
