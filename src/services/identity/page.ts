import { randomBytes } from 'node:crypto'

/**
 * The page shell shared by the sign-in confirmation (login-page.ts) and the sign-in, consent and
 * error pages of the authorization endpoint (oauth/pages.ts): small, self-contained (inline style
 * and script under a per-page CSP nonce, no external assets), every interpolated value escaped. The route adds no-store, X-Frame-Options and this CSP (frame-ancestors 'none'
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

/** A page of the sign-in and authorization flows. */
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
