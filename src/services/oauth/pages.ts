import { randomBytes } from 'node:crypto'
import type { AuthorizationParams, ValidAuthorization } from './authorize.ts'
import { ACCESS_TTL_S, REFRESH_TTL_MS } from './common.ts'

/**
 * The sign-in, consent and error pages of the authorization endpoint: small, self-contained
 * (inline style and script under a per-page CSP nonce, no external assets), every interpolated
 * value escaped. The route adds no-store, X-Frame-Options and this CSP (frame-ancestors 'none'
 * against clickjacking the Approve button).
 */
export interface Page {
  status: number
  html: string
  csp: string
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** A page of the sign-in and authorization flows (also the sign-in confirmation, identity/login-page.ts). */
export function render(
  status: number,
  title: string,
  body: string,
  opts: { script?: string; formTo?: string } = {},
): Page {
  const nonce = randomBytes(16).toString('base64')
  const style =
    'body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}' +
    'h1{font-size:1.4rem}input[type=email]{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}' +
    'button{font:inherit;padding:.5rem 1.2rem;margin:.5rem .5rem 0 0;cursor:pointer}.muted{color:#555;font-size:.9rem}' +
    'code{background:#f2f2f2;padding:0 .25rem}'
  const script = opts.script ? `<script nonce="${nonce}">${opts.script}</script>` : ''
  const html =
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer">` +
    `<title>${escapeHtml(title)} · erm3</title><style nonce="${nonce}">${style}</style></head>` +
    `<body><main><h1>${escapeHtml(title)}</h1>${body}</main>${script}</body></html>`
  // Chrome applies form-action to the redirect that follows a form post: allow the client's origin.
  const formAction = ["'self'", ...(opts.formTo ? [opts.formTo] : [])].join(' ')
  const csp =
    `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; connect-src 'self'; ` +
    `form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`
  return { status, html, csp }
}

export function errorPage(status: number, message: string): Page {
  return render(
    status,
    'Authorization failed',
    `<p>${escapeHtml(message)}</p><p class="muted">Nothing was sent back to the application. Close this window and start again from the application.</p>`,
  )
}

/**
 * Not signed in: the passwordless sign-in. The form posts to /auth/login with `next` = this
 * authorization request, so the mailed link leads back here signed in. With scripts the post is
 * made in place and the page says to check the mail; without, the browser shows /auth/login's answer.
 */
export function signInPage(next: string, clientName: string | null, status = 200): Page {
  const who = clientName ? ` to let <strong>${escapeHtml(clientName)}</strong> use your account` : ''
  const body =
    `<p>Sign in to erm3${who}. We will e-mail you a one-time link (valid 15 minutes).</p>` +
    `<form id="f" method="post" action="/auth/login">` +
    `<input type="hidden" name="next" value="${escapeHtml(next)}">` +
    `<label>E-mail address<br><input type="email" name="email" required autocomplete="email" autofocus></label>` +
    `<br><button type="submit">E-mail me a sign-in link</button></form>` +
    `<p id="sent" hidden>Check your mail: open the sign-in link to continue. You can close this window.</p>`
  const script =
    `document.getElementById('f').addEventListener('submit',async function(e){e.preventDefault();` +
    `var d=new FormData(this);var r=await fetch('/auth/login',{method:'POST',headers:{'content-type':'application/json'},` +
    `body:JSON.stringify({email:d.get('email'),next:d.get('next')})});` +
    `if(r.status===202){this.hidden=true;document.getElementById('sent').hidden=false}` +
    `else{alert('Could not send the link ('+r.status+'). Try again later.')}})`
  return render(status, 'Sign in', body, { script })
}

const hours = ACCESS_TTL_S / 3600
const days = REFRESH_TTL_MS / 86_400_000

/**
 * What an approval hands over, stated exactly: the access token is an API key of the account
 * (`erm_user_live_…`), so it passes every operation that accepts the account's own keys, and
 * none that needs a signed-in session.
 */
const GRANT_TERMS =
  '<p>If you approve, it gets an access token that acts for your account. With it, it can:</p><ul>' +
  '<li><strong>spend your prepaid balance</strong>: call every analytics endpoint and MCP tool (risk ' +
  'metrics, decompositions, returns, rankings, correlations, fundamentals, portfolio snapshots, chat), ' +
  'each billed to your account (within your monthly spend cap, if you set one);</li>' +
  '<li><strong>read your account data</strong>: balance, invoices, usage, ledger, settings, the audit log ' +
  '(with its e-mail and IP addresses) and the list of your API keys (names and prefixes, never the keys);</li>' +
  '<li><strong>read your brokerage holdings</strong>, if you linked a brokerage account (Plaid): accounts, ' +
  'balances and positions, 0.02 USD a call;</li>' +
  '<li>create a top-up payment link (Stripe Checkout), which only you can pay.</li></ul>' +
  '<p>It cannot create, change or revoke API keys, change your settings or spend cap, manage webhooks, ' +
  'link or unlink brokerage accounts, pay a top-up, or sign in to your dashboard.</p>' +
  `<p>Each access token lasts ${hours} hour; the application renews it with a refresh token, which ` +
  `lapses after ${days} days without a renewal. So access lasts until you revoke it: in the ` +
  '<a href="/app#/keys">dashboard</a>, Keys page, under <em>Connected agents</em>.</p>'

/** Signed in: what is asked, by whom, what it allows, and where the answer goes; Approve or Deny. */
export function consentPage(
  r: ValidAuthorization,
  params: AuthorizationParams,
  csrf: string,
  email: string,
): Page {
  const target = new URL(r.redirectUri)
  const hidden = Object.entries({ ...params, csrf_token: csrf })
    .filter(([, v]) => typeof v === 'string')
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v as string)}">`)
    .join('')
  const body =
    `<p><strong>${escapeHtml(r.client.clientName)}</strong> wants to use erm3 as <strong>${escapeHtml(email)}</strong>.</p>` +
    GRANT_TERMS +
    `<p class="muted">Scope: <code>${escapeHtml(r.scope)}</code>. ` +
    `After your answer you return to <strong>${escapeHtml(target.host)}</strong>. ` +
    `Approve only if you started this from that application.</p>` +
    `<form method="post" action="/oauth/authorize">${hidden}` +
    `<button type="submit" name="decision" value="approve">Approve</button>` +
    `<button type="submit" name="decision" value="deny">Deny</button></form>`
  return render(200, 'Authorize application', body, { formTo: target.origin })
}
