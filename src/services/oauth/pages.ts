import { randomBytes } from 'node:crypto'
import type { AuthorizationParams, ValidAuthorization } from './authorize.ts'

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

/** Signed in: what is asked, by whom, and where the answer goes; Approve or Deny. */
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
    `<p>It will receive an access token that calls the API on your account; calls are billed to your prepaid balance. ` +
    `Scope: <code>${escapeHtml(r.scope)}</code>.</p>` +
    `<p class="muted">After your answer you return to <strong>${escapeHtml(target.host)}</strong>. ` +
    `Approve only if you started this from that application.</p>` +
    `<form method="post" action="/oauth/authorize">${hidden}` +
    `<button type="submit" name="decision" value="approve">Approve</button>` +
    `<button type="submit" name="decision" value="deny">Deny</button></form>`
  return render(200, 'Authorize application', body, { formTo: target.origin })
}
