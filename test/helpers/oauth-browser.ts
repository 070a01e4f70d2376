import { createHash, randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import type { TestApp } from './test-app.ts'

/** A port free on 127.0.0.1 right now (for an app whose PUBLIC_URL must name its own origin). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** A request body as JSON or as a form post: its Content-Type and bytes (none for neither). */
export function encodeBody(o: { json?: unknown; form?: Record<string, string> }): {
  contentType?: string
  payload?: string
} {
  if (o.json !== undefined) return { contentType: 'application/json', payload: JSON.stringify(o.json) }
  if (o.form)
    return {
      contentType: 'application/x-www-form-urlencoded',
      payload: new URLSearchParams(o.form).toString(),
    }
  return {}
}

/** Hidden form fields of a page (the sign-in and consent forms), entities decoded. */
export function hiddenFields(html: string): Record<string, string> {
  return Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
      m[1],
      (m[2] as string).replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n))),
    ]),
  ) as Record<string, string>
}

/** A browser: one cookie jar, redirects seen rather than followed. */
export function browser(origin: string) {
  let cookie = ''
  return {
    async go(url: string, init: RequestInit = {}) {
      const r = await fetch(new URL(url, origin), {
        ...init,
        redirect: 'manual',
        headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) },
      })
      const set = r.headers.get('set-cookie')
      if (set) cookie = set.split(';')[0] as string
      return { status: r.status, location: r.headers.get('location'), html: await r.text() }
    },
  }
}

/**
 * The user's browser on an authorization URL: the sign-in page, the link mailed to `email` (read
 * from the outbox), the consent page, approve. Returns where the server finally redirects (the
 * client's redirect URI with `code`, or with `error`); throws when a step answers unexpectedly.
 */
export async function approveInBrowser(t: TestApp, authorizationUrl: URL, email: string): Promise<URL> {
  const { go } = browser(authorizationUrl.origin)
  const expect = (step: string, r: { status: number; location: string | null }, status: number) => {
    if (r.status !== status) throw new Error(`${step}: expected ${status}, got ${r.status}`)
  }
  const signIn = await go(authorizationUrl.href)
  expect('sign-in page', signIn, 200)
  const next = hiddenFields(signIn.html).next as string
  const sent = await go('/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, next }),
  })
  expect('sign-in request', sent, 202)
  const link = t
    .outbox()
    .filter((m) => m.to === email)
    .at(-1)
    ?.text.match(/https?:\/\/\S+/)?.[0]
  if (!link) throw new Error(`no sign-in link mailed to ${email}`)
  const back = await go(link)
  expect('sign-in link', back, 303)
  const consent = await go(back.location as string)
  expect('consent page', consent, 200)
  const approved = await go('/oauth/authorize', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...hiddenFields(consent.html), decision: 'approve' }).toString(),
  })
  expect('consent', approved, 303)
  return new URL(approved.location as string)
}

export interface InjectAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

/** One request to the app in-process, with a JSON or form-encoded body, from client address `ip`. */
export async function injectRequest(
  app: TestApp['app'],
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  o: { headers?: Record<string, string>; json?: unknown; form?: Record<string, string>; ip: string },
): Promise<InjectAnswer> {
  const headers: Record<string, string> = { ...o.headers }
  const { contentType, payload } = encodeBody(o)
  if (contentType) headers['content-type'] = contentType
  const r = await app.fastify.inject({
    method,
    url,
    headers,
    remoteAddress: o.ip,
    ...(payload !== undefined ? { payload } : {}),
  })
  const h: Record<string, string> = {}
  for (const [k, v] of Object.entries(r.headers)) if (v !== undefined) h[k] = String(v)
  return { status: r.statusCode, headers: h, body: r.body }
}

/**
 * A signed-in browser (its session `cookie`) on the consent page of `clientId`, approving, all
 * in-process: the authorization code, its PKCE verifier and redirect URI. `ip` gives each request
 * its client address. Throws when a step answers unexpectedly.
 */
export async function approveWithSession(
  app: TestApp['app'],
  cookie: string,
  clientId: string,
  redirectUri: string,
  ip: () => string,
): Promise<{ code: string; verifier: string; redirectUri: string }> {
  const verifier = randomBytes(32).toString('base64url')
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'mcp:read',
    state: randomBytes(4).toString('hex'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })
  const page = await injectRequest(app, 'GET', `/oauth/authorize?${query}`, { headers: { cookie }, ip: ip() })
  if (page.status !== 200 || !/Approve/.test(page.body))
    throw new Error(`consent page: ${page.status} ${page.body.slice(0, 200)}`)
  const r = await injectRequest(app, 'POST', '/oauth/authorize', {
    headers: { cookie },
    form: { ...hiddenFields(page.body), decision: 'approve' },
    ip: ip(),
  })
  const code = new URL(r.headers.location ?? 'x:/').searchParams.get('code')
  if (r.status !== 303 || !code) throw new Error(`consent: ${r.status} ${r.headers.location ?? r.body}`)
  return { code, verifier, redirectUri }
}

/** The authorization-code grant of `approved` (as approveWithSession gives it) at the token endpoint. */
export function exchangeCode(
  app: TestApp['app'],
  clientId: string,
  approved: { code: string; verifier: string; redirectUri: string },
  ip: string,
): Promise<InjectAnswer> {
  return injectRequest(app, 'POST', '/oauth/token', {
    form: {
      grant_type: 'authorization_code',
      code: approved.code,
      redirect_uri: approved.redirectUri,
      client_id: clientId,
      code_verifier: approved.verifier,
    },
    ip,
  })
}
