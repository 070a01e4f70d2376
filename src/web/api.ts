/**
 * The dashboard's only way to the server: the public API. The session is the HttpOnly cookie
 * set by the sign-in link (never readable here); state changes carry the CSRF token from the
 * `erm3_csrf` cookie in `X-CSRF-Token` (double submit). Metered data calls use the session's
 * dashboard key, held in this page's memory only (never localStorage).
 */

export interface Problem {
  status: number
  code: string
  detail: string
}

export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail)
  }
}

function csrfToken(): string {
  const m = /(?:^|;\s*)erm3_csrf=([^;]+)/.exec(document.cookie)
  return m ? decodeURIComponent(m[1] as string) : ''
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'DELETE'
  body?: unknown
  /** Bearer key (metered data calls); else the session cookie. */
  key?: string
  accept?: string
}

export interface Answer<T> {
  data: T
  costUsd: number | null
  cache: string | null
  response: Response
}

export async function call<T>(path: string, o: CallOptions = {}): Promise<Answer<T>> {
  const method = o.method ?? (o.body === undefined ? 'GET' : 'POST')
  const headers: Record<string, string> = { accept: o.accept ?? 'application/json' }
  if (o.body !== undefined) headers['content-type'] = 'application/json'
  if (o.key) headers.authorization = `Bearer ${o.key}`
  else if (method !== 'GET') headers['x-csrf-token'] = csrfToken()
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  })
  const cost = response.headers.get('x-api-cost-usd')
  const meta = {
    costUsd: cost === null ? null : Number(cost),
    cache: response.headers.get('x-cache-status'),
    response,
  }
  if (!response.ok) {
    let p: Problem = { status: response.status, code: 'HTTP_ERROR', detail: response.statusText }
    try {
      const j = (await response.json()) as Partial<Problem>
      p = { status: response.status, code: j.code ?? p.code, detail: j.detail ?? p.detail }
    } catch {}
    throw new ApiError(p)
  }
  const type = response.headers.get('content-type') ?? ''
  const data = (type.includes('json') ? await response.json() : await response.text()) as T
  return { data, ...meta }
}

let explorerKey: { key: string; id: string; expires: number } | null = null
let provisioning: Promise<string> | null = null

/**
 * The session's dashboard key, kept in this page's memory: asked for when the first metered call
 * needs it (one request even when several calls ask at once). The server derives it from the
 * session, so a reload or a second tab gets the same key back, never another one.
 */
export function dataKey(): Promise<string> {
  if (explorerKey && explorerKey.expires > Date.now() + 60_000) return Promise.resolve(explorerKey.key)
  provisioning ??= call<{ api_key: string; key_id: string; expires_at?: string | null }>(
    '/auth/dashboard-key',
    { method: 'POST' },
  )
    .then((r) => {
      const expires = r.data.expires_at ? Date.parse(r.data.expires_at) : Date.now() + 12 * 3600_000
      explorerKey = { key: r.data.api_key, id: r.data.key_id, expires }
      return explorerKey.key
    })
    .finally(() => {
      provisioning = null
    })
  return provisioning
}

/** The signed-in account (a 401 ApiError when nobody is: pages then go to sign-in). */
export function requireSession(): Promise<
  Answer<{ account_id: string; email: string; features?: { card_top_ups: boolean; brokerage: boolean } }>
> {
  return call('/auth/session')
}

/** A metered data call with the dashboard key; once more with a fresh one if it was revoked meanwhile. */
export async function data<T>(path: string, body?: unknown): Promise<Answer<T>> {
  try {
    return await call<T>(path, { key: await dataKey(), body })
  } catch (e) {
    if (!(e instanceof ApiError) || e.problem.code !== 'REVOKED_KEY') throw e
    explorerKey = null
    return call<T>(path, { key: await dataKey(), body })
  }
}

/**
 * Sign out: end the session on the server (its cookies are cleared, and the server revokes the
 * session's dashboard key). `everywhere` ends every session of the account: other browsers and
 * devices too.
 */
export async function signOut(everywhere = false): Promise<void> {
  explorerKey = null
  await call(everywhere ? '/auth/logout-all' : '/auth/logout', { method: 'POST' })
}
