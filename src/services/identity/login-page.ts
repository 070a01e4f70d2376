import { escapeHtml, type Page, render } from './page.ts'

/**
 * The page a sign-in link shows outside the browser that asked for it: it names the account and
 * signs in only when its button posts the form (same origin, CSRF token bound to this browser's
 * cookie). Opening the link uses nothing, so mail scanners that fetch links neither burn them nor
 * sign anyone in, and a link someone else sent cannot sign this browser into their account unseen.
 */
export function confirmLoginPage(o: {
  email: string
  token: string
  next: string | null
  csrf: string
}): Page {
  const fields = { token: o.token, ...(o.next ? { next: o.next } : {}), csrf_token: o.csrf }
  const hidden = Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${k}" value="${escapeHtml(v)}">`)
    .join('')
  const email = escapeHtml(o.email)
  const body =
    `<p>This link signs this browser in to erm3 as <strong>${email}</strong>.</p>` +
    `<p class="muted">It was opened in another browser than the one that asked for it. Continue only if you asked for ` +
    `this link yourself. If someone sent it to you, close this page: you would be signed in to their account, and what ` +
    `you do there (linked brokerage accounts, keys) would be theirs to see.</p>` +
    `<form method="post" action="/auth/callback">${hidden}` +
    `<button type="submit">Sign in as ${email}</button></form>`
  return render(200, `Sign in as ${o.email}?`, body)
}
