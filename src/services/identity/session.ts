import { errors as joseErrors, jwtVerify, SignJWT } from 'jose'
import { AppError } from '../../platform/errors.ts'
import type { ServiceContext } from '../context.ts'

/** Session lifetime (cookie and JWT). */
export const SESSION_TTL_S = 12 * 3600
const AUDIENCE = 'erm3-session'

export interface Session {
  accountId: string
  email: string
}

function key(ctx: ServiceContext): Uint8Array {
  return new TextEncoder().encode(ctx.secrets.sessionSecret)
}

export async function signSession(ctx: ServiceContext, s: Session): Promise<string> {
  const now = Math.floor(ctx.now() / 1000)
  return new SignJWT({ email: s.email })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(s.accountId)
    .setIssuer(ctx.config.publicUrl)
    .setAudience(AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + SESSION_TTL_S)
    .sign(key(ctx))
}

/** Verifies a session JWT (signature, issuer, audience, expiry against the service clock). */
export async function verifySession(ctx: ServiceContext, token: string | null): Promise<Session> {
  if (!token)
    throw new AppError('MISSING_CREDENTIALS', 'Sign in first: send Authorization: Bearer <SESSION_JWT>')
  try {
    const { payload } = await jwtVerify(token, key(ctx), {
      algorithms: ['HS256'],
      issuer: ctx.config.publicUrl,
      audience: AUDIENCE,
      currentDate: new Date(ctx.now()),
    })
    if (typeof payload.sub !== 'string' || typeof payload.email !== 'string')
      throw new AppError('INVALID_KEY', 'The session token is malformed')
    return { accountId: payload.sub, email: payload.email }
  } catch (e) {
    if (e instanceof AppError) throw e
    if (e instanceof joseErrors.JWTExpired)
      throw new AppError('EXPIRED_KEY', 'The session has expired: sign in again')
    throw new AppError('INVALID_KEY', 'The session token is not valid')
  }
}
