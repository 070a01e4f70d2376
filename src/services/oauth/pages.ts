import { escapeHtml, type Page, render } from '../identity/page.ts'
import type { AuthorizationParams, ValidAuthorization } from './authorize.ts'
import { ACCESS_TTL_S, REFRESH_TTL_MS } from './common.ts'

/*
 * The sign-in, consent and error pages of the authorization endpoint, in the page shell of
 * identity/page.ts (nonce CSP, escaping, the headers the route adds).
 */

/** The authorization failed: nothing goes back to the application. */
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
  // A native app's private-use scheme (com.example.app:/cb) has no host nor origin: name the scheme.
  const returnTo = target.host || `the ${target.protocol} application`
  const formTo = target.origin === 'null' ? target.protocol : target.origin
  const hidden = Object.entries({ ...params, csrf_token: csrf })
    .filter(([, v]) => typeof v === 'string')
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v as string)}">`)
    .join('')
  const body =
    `<p><strong>${escapeHtml(r.client.clientName)}</strong> wants to use erm3 as <strong>${escapeHtml(email)}</strong>.</p>` +
    GRANT_TERMS +
    `<p class="muted">Scope: <code>${escapeHtml(r.scope)}</code>. ` +
    `After your answer you return to <strong>${escapeHtml(returnTo)}</strong>. ` +
    `Approve only if you started this from that application.</p>` +
    `<form method="post" action="/oauth/authorize">${hidden}` +
    `<button type="submit" name="decision" value="approve">Approve</button>` +
    `<button type="submit" name="decision" value="deny">Deny</button></form>`
  return render(200, 'Authorize application', body, { formTo })
}
