import { createHash, randomBytes } from 'node:crypto'
import { AppError } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { ServiceContext } from '../context.ts'
import { SESSION_TTL_S, signSession } from './session.ts'

/** One-time sign-in links: 15 minutes, single use, stored only as a hash. */
export const LOGIN_TTL_MS = 15 * 60_000

export function normaliseEmail(raw: string): string {
  return raw.trim().toLowerCase()
}

/** Only same-site relative paths may be continued to after sign-in (no open redirects). */
export function safeNext(next: string | undefined): string | null {
  if (!next) return null
  return next.startsWith('/') && !next.startsWith('//') && !next.includes('\\') ? next : null
}

function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

export async function requestLogin(ctx: ServiceContext, rawEmail: string, next?: string): Promise<void> {
  const email = normaliseEmail(rawEmail)
  const token = randomBytes(32).toString('base64url')
  const now = ctx.now()
  await ctx.accounts.createLoginToken({
    hash: tokenHash(token),
    email,
    expiresAt: now + LOGIN_TTL_MS,
    createdAt: now,
  })
  const url = new URL('/auth/callback', ctx.config.publicUrl)
  url.searchParams.set('token', token)
  const target = safeNext(next)
  if (target) url.searchParams.set('next', target)
  await ctx.mailer.send({
    to: email,
    subject: 'Your erm3 sign-in link',
    text: `Sign in to erm3 by opening this link within 15 minutes (it works once):\n\n${url.href}\n\nIf you did not ask for it, ignore this e-mail.\n`,
  })
}

export interface CompletedLogin {
  sessionJwt: string
  expiresIn: number
  accountId: string
  email: string
  next: string | null
}

/** Consumes a sign-in token; the first sign-in of an address creates its account. */
export async function completeLogin(
  ctx: ServiceContext,
  token: string,
  next?: string,
): Promise<CompletedLogin> {
  const email = await ctx.accounts.consumeLoginToken(tokenHash(token), ctx.now())
  if (!email)
    throw new AppError('INVALID_KEY', 'This sign-in link is invalid, used or expired: request a new one')
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
  }
  const sessionJwt = await signSession(ctx, { accountId: account.id, email })
  return { sessionJwt, expiresIn: SESSION_TTL_S, accountId: account.id, email, next: safeNext(next) }
}
