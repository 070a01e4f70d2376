import { createHash, randomBytes } from 'node:crypto'
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose'
import { AppError } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { ServiceContext } from '../context.ts'
import { type AuditActor, recordAudit } from './audit.ts'

/** Session lifetime (cookie, JWT and the server-side row). */
export const SESSION_TTL_S = 12 * 3600
/** How stale a session's last_seen_at may get before a request moves it (one write per session per span). */
const SESSION_TOUCH_MS = 5 * 60_000
const AUDIENCE = 'erm3-session'

export interface Session {
  /** The server-side session (`ses_…`): what signing out revokes. */
  sessionId: string
  accountId: string
  email: string
  /** When the session ends (epoch ms): set by verifySession. */
  expiresAt?: number
}

function key(ctx: ServiceContext): Uint8Array {
  return new TextEncoder().encode(ctx.secrets.sessionSecret)
}

const secretHash = (secret: string) => createHash('sha256').update(secret).digest('hex')

/**
 * Opens a server-side session for the account and returns its JWT and id. The JWT carries the
 * session's random secret (`sid`); the server keeps only the secret's hash, so a session is
 * refused as soon as its row is revoked, on every node reading the same database.
 */
export async function openSession(
  ctx: ServiceContext,
  s: Omit<Session, 'sessionId'>,
): Promise<{ jwt: string; sessionId: string }> {
  const nowMs = ctx.now()
  const now = Math.floor(nowMs / 1000)
  const secret = randomBytes(32).toString('base64url')
  const sessionId = newId('ses', nowMs)
  await ctx.accounts.sessions().createSession({
    id: sessionId,
    hash: secretHash(secret),
    accountId: s.accountId,
    createdAt: nowMs,
    expiresAt: (now + SESSION_TTL_S) * 1000,
  })
  const jwt = await new SignJWT({ email: s.email, sid: secret })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(s.accountId)
    .setIssuer(ctx.config.publicUrl)
    .setAudience(AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + SESSION_TTL_S)
    .sign(key(ctx))
  return { jwt, sessionId }
}

/** A new session's JWT (openSession without the id). */
export async function signSession(ctx: ServiceContext, s: Omit<Session, 'sessionId'>): Promise<string> {
  return (await openSession(ctx, s)).jwt
}

/**
 * Verifies a session JWT (signature, issuer, audience, expiry against the service clock), then
 * its server-side row: unknown (a JWT of an older version, or a purged session) → INVALID_KEY,
 * signed out → REVOKED_KEY, expired → EXPIRED_KEY. One indexed read per request, no cache.
 */
export async function verifySession(ctx: ServiceContext, token: string | null): Promise<Session> {
  if (!token)
    throw new AppError('MISSING_CREDENTIALS', 'Sign in first: send Authorization: Bearer <SESSION_JWT>')
  let claims: { accountId: string; email: string; secret: string }
  try {
    const { payload } = await jwtVerify(token, key(ctx), {
      algorithms: ['HS256'],
      issuer: ctx.config.publicUrl,
      audience: AUDIENCE,
      currentDate: new Date(ctx.now()),
    })
    if (
      typeof payload.sub !== 'string' ||
      typeof payload.email !== 'string' ||
      typeof payload.sid !== 'string'
    )
      throw new AppError(
        'INVALID_KEY',
        'The session token is malformed or from an older version: sign in again',
      )
    claims = { accountId: payload.sub, email: payload.email, secret: payload.sid }
  } catch (e) {
    if (e instanceof AppError) throw e
    if (e instanceof joseErrors.JWTExpired)
      throw new AppError('EXPIRED_KEY', 'The session has expired: sign in again')
    throw new AppError('INVALID_KEY', 'The session token is not valid')
  }
  const now = ctx.now()
  const row = await ctx.accounts.sessions().findSessionByHash(secretHash(claims.secret))
  if (!row || row.accountId !== claims.accountId)
    throw new AppError('INVALID_KEY', 'This session is not known to the server: sign in again')
  if (row.revokedAt !== null) throw new AppError('REVOKED_KEY', 'This session was signed out: sign in again')
  if (row.expiresAt <= now) throw new AppError('EXPIRED_KEY', 'The session has expired: sign in again')
  if (now - row.lastSeenAt >= SESSION_TOUCH_MS) await ctx.accounts.sessions().touchSession(row.id, now)
  return { sessionId: row.id, accountId: claims.accountId, email: claims.email, expiresAt: row.expiresAt }
}

/**
 * Signs one session out (logout): its JWT is refused from now on, wherever it is held. Recorded
 * in the account's audit log.
 */
export async function signOut(ctx: ServiceContext, s: Session, actor: AuditActor): Promise<void> {
  await ctx.accounts.sessions().revokeSession(s.sessionId, ctx.now())
  await recordAudit(ctx, actor, 'session.signed_out', s.sessionId, null)
}

/** Signs every session of the account out ("sign out everywhere"); how many were still signed in. */
export async function signOutEverywhere(ctx: ServiceContext, s: Session, actor: AuditActor): Promise<number> {
  const n = await ctx.accounts.sessions().revokeAccountSessions(s.accountId, ctx.now())
  await recordAudit(ctx, actor, 'session.signed_out_everywhere', null, { sessions: n })
  return n
}
