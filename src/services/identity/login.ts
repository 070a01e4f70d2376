import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { CONTROL_CHARS } from '../../contract/ops/auth.ts'
import { AppError } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { ServiceContext } from '../context.ts'
import { type AuditActor, recordAudit } from './audit.ts'
import { openSession, SESSION_TTL_S } from './session.ts'
import { grantSignupCredit } from './signup-credit.ts'

/** One-time sign-in links: 15 minutes, single use, stored only as a hash. */
export const LOGIN_TTL_MS = 15 * 60_000
/** Where a sign-in continues when the `next` it was given is not a safe same-origin path. */
export const DEFAULT_NEXT = '/app'

const CONTROL = new RegExp(`[${CONTROL_CHARS}]`)

export function normaliseEmail(raw: string): string {
  return raw.trim().toLowerCase()
}

/**
 * Where to continue after sign-in: `next` as a same-origin path, or `/app` when it is anything
 * else; null when none was given. Accepted only when the raw value starts with a single `/`, has
 * no control character and no backslash, its path has no encoded slash or backslash and no `//`
 * once decoded, and it parses back (against PUBLIC_URL) to this origin. What is returned is the
 * parsed URL's path, query and fragment, so the browser resolves exactly what was checked.
 */
export function safeNext(next: string | undefined, publicUrl: string): string | null {
  if (next === undefined || next === '') return null
  return sameOriginPath(next, publicUrl) ?? DEFAULT_NEXT
}

function sameOriginPath(raw: string, publicUrl: string): string | null {
  if (!raw.startsWith('/') || raw.startsWith('//') || raw.includes('\\') || CONTROL.test(raw)) return null
  const path = raw.split(/[?#]/, 1)[0] as string
  if (/%2f|%5c/i.test(path)) return null
  let decoded: string
  try {
    decoded = decodeURIComponent(path)
  } catch {
    return null
  }
  if (CONTROL.test(decoded) || decoded.includes('\\') || decoded.includes('//')) return null
  const base = new URL(publicUrl)
  const url = new URL(raw, base)
  if (url.origin !== base.origin) return null
  const out = `${url.pathname}${url.search}${url.hash}`
  return out.startsWith('/') && !out.startsWith('//') && !out.includes('\\') ? out : null
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

/** A browser's sign-in state nonce: 32 random bytes, base64url. */
const NONCE = /^[A-Za-z0-9_-]{43}$/

/**
 * The state nonce for a browser asking for a link: the one it holds already (so every link it
 * asked for stays bound to it), else a new one.
 */
export function loginState(held: string | null): string {
  return held !== null && NONCE.test(held) ? held : randomBytes(32).toString('base64url')
}

/**
 * Mails a one-time sign-in link. `state` is the nonce of the browser that asked (kept in its
 * cookie, stored here as a hash): the link signs in directly only in that browser.
 */
export async function requestLogin(
  ctx: ServiceContext,
  rawEmail: string,
  next: string | undefined,
  state: string | null,
): Promise<void> {
  const email = normaliseEmail(rawEmail)
  const token = randomBytes(32).toString('base64url')
  const now = ctx.now()
  await ctx.accounts.createLoginToken({
    hash: sha256(token),
    email,
    expiresAt: now + LOGIN_TTL_MS,
    createdAt: now,
    stateHash: state === null ? null : sha256(state),
  })
  const url = new URL('/auth/callback', ctx.config.publicUrl)
  url.searchParams.set('token', token)
  const target = safeNext(next, ctx.config.publicUrl)
  if (target) url.searchParams.set('next', target)
  await ctx.mailer.send({
    to: email,
    subject: 'Your erm3 sign-in link',
    text: `Sign in to erm3 by opening this link within 15 minutes (it works once):\n\n${url.href}\n\nIf you did not ask for it, ignore this e-mail.\n`,
  })
}

const invalidLink = () =>
  new AppError('INVALID_KEY', 'This sign-in link is invalid, used or expired: request a new one')

export interface PendingLogin {
  email: string
  /** The browser presented the state nonce of the browser that asked for the link. */
  sameBrowser: boolean
}

/** A usable sign-in link, without using it: whose it is, and whether this is the browser that asked. */
export async function findLogin(
  ctx: ServiceContext,
  token: string,
  state: string | null,
): Promise<PendingLogin> {
  const found = await ctx.accounts.findLoginToken(sha256(token), ctx.now())
  if (!found) throw invalidLink()
  return {
    email: found.email,
    sameBrowser: state !== null && found.stateHash !== null && equal(sha256(state), found.stateHash),
  }
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/**
 * The confirmation form's CSRF token: an HMAC of the page's cookie nonce and the link, so only the
 * browser the page was served to (holding that SameSite=Strict cookie) can post it, for that link.
 */
export function confirmToken(ctx: ServiceContext, nonce: string, token: string): string {
  return createHmac('sha256', ctx.secrets.sessionSecret)
    .update(JSON.stringify(['login-confirm', nonce, sha256(token)]))
    .digest('base64url')
}

export function confirmTokenValid(
  ctx: ServiceContext,
  nonce: string | null,
  token: string,
  given: string | undefined,
): boolean {
  return nonce !== null && given !== undefined && equal(confirmToken(ctx, nonce, token), given)
}

export interface CompletedLogin {
  sessionJwt: string
  expiresIn: number
  accountId: string
  email: string
  next: string | null
}

/** How a sign-in was completed, for the audit log. */
export type LoginVia = 'link' | 'confirmation' | 'api'

/**
 * Consumes a sign-in token and opens a session; the first sign-in of an address creates its
 * account. Recorded in the account's audit log.
 */
export async function completeLogin(
  ctx: ServiceContext,
  token: string,
  next: string | undefined,
  from: { ip: string | null; via: LoginVia },
): Promise<CompletedLogin> {
  const email = await ctx.accounts.consumeLoginToken(sha256(token), ctx.now())
  if (!email) throw invalidLink()
  let account = await ctx.accounts.findAccountByEmail(email)
  if (!account) {
    try {
      account = await ctx.accounts.createAccount({
        id: newId('acct'),
        email,
        kind: 'user',
        createdAt: ctx.now(),
      })
    } catch {
      // Two links of one address followed at once: the other request created it.
      account = await ctx.accounts.findAccountByEmail(email)
      if (!account) throw new AppError('INTERNAL', 'could not create the account')
    }
    // Both racers grant it: the ledger keeps one (idempotent per reference).
    await grantSignupCredit(ctx, account.id)
  }
  const opened = await openSession(ctx, { accountId: account.id, email })
  const actor: AuditActor = { accountId: account.id, type: 'session', id: email, ip: from.ip }
  await recordAudit(ctx, actor, 'session.signed_in', opened.sessionId, { via: from.via })
  return {
    sessionJwt: opened.jwt,
    expiresIn: SESSION_TTL_S,
    accountId: account.id,
    email,
    next: safeNext(next, ctx.config.publicUrl),
  }
}
