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
