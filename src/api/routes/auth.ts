import type { FastifyReply, FastifyRequest } from 'fastify'
import { microsToUsd } from '../../contract/pricing.ts'
import { AppError } from '../../platform/errors.ts'
import type { ServiceContext } from '../../services/context.ts'
import {
  dashboardKey,
  revokeDashboardKey,
  revokeDashboardKeys,
} from '../../services/identity/dashboard-key.ts'
import { freeProvisionCap } from '../../services/identity/free-cap.ts'
import {
  type CompletedLogin,
  completeLogin,
  confirmToken,
  confirmTokenValid,
  DEFAULT_NEXT,
  findLogin,
  LOGIN_TTL_MS,
  loginState,
  normaliseEmail,
  requestLogin,
  safeNext,
} from '../../services/identity/login.ts'
import { confirmLoginPage } from '../../services/identity/login-page.ts'
import { provisionFree, provisionKey } from '../../services/identity/provision.ts'
import { SESSION_TTL_S, signOut, signOutEverywhere } from '../../services/identity/session.ts'
import { takeIpToken, takeRecipientToken, tighter } from '../../services/limits.ts'
import { CSRF_COOKIE, cookieOf, csrfTokenFor, SESSION_COOKIE } from '../auth-hook.ts'
import { sendPage } from '../pages.ts'
import { setRateHeaders } from '../problem.ts'
import type { EdgeMetrics } from '../prom.ts'
import { requireSession, sessionActor } from '../request-state.ts'
import { type RouteDeps, type RouteFile, type RouteTable, routeFile } from './types.ts'

const iso = (ms: number) => new Date(ms).toISOString()

/** The nonce of the browser that asked for a sign-in link (sent back to /auth/login and /auth/callback). */
const LOGIN_STATE_COOKIE = 'erm3_login'
/** The confirmation page's nonce, which its form's CSRF token is bound to (SameSite=Strict). */
const CONFIRM_COOKIE = 'erm3_confirm'
const LINK_TTL_S = LOGIN_TTL_MS / 1000

/**
 * A request a browser sent from another site: its Sec-Fetch-Site says so, or (browsers without
 * it) its Origin names another origin. Programs send neither and pass. An opaque `Origin: null`
 * (a form on a no-referrer page, our own confirmation page included) proves nothing either way.
 */
function fromAnotherSite(req: FastifyRequest, origin: string): boolean {
  const site = req.headers['sec-fetch-site']
  if (typeof site === 'string') return site !== 'same-origin' && site !== 'none'
  const from = req.headers.origin
  return typeof from === 'string' && from !== 'null' && from !== origin
}

const sessionBody = (done: CompletedLogin) => ({
  session_jwt: done.sessionJwt,
  token_type: 'Bearer' as const,
  expires_in: done.expiresIn,
  account_id: done.accountId,
  email: done.email,
})

export function authRoutes({ ctx, edgeMetrics: metrics }: RouteDeps): RouteFile {
  const cookies = sessionCookies(ctx)
  return routeFile(import.meta.url, {
    ...signInRoutes(ctx, cookies),
    ...sessionRoutes(ctx, cookies),
    ...keyRoutes(ctx, metrics),
  })
}

type SessionCookies = ReturnType<typeof sessionCookies>

/** The cookies of signing in and out (Secure when the public URL is https). */
function sessionCookies(ctx: ServiceContext) {
  const secure = ctx.config.publicUrl.startsWith('https:')
  const gone = { secure, path: '/', maxAge: 0 }

  /** The session cookie (first: a client keeping one cookie keeps it) and its CSRF token; the nonces cleared. */
  const signedIn = (req: FastifyRequest, reply: FastifyReply, jwt: string) =>
    reply.header('Cache-Control', 'no-store').header('Set-Cookie', [
      req.server.serializeCookie(SESSION_COOKIE, jwt, {
        httpOnly: true,
        secure,
        sameSite: 'lax',
        path: '/',
        maxAge: SESSION_TTL_S,
      }),
      // Read by the dashboard and echoed in X-CSRF-Token on every change it makes.
      req.server.serializeCookie(CSRF_COOKIE, csrfTokenFor(jwt), {
        httpOnly: false,
        secure,
        sameSite: 'strict',
        path: '/',
        maxAge: SESSION_TTL_S,
      }),
      req.server.serializeCookie(LOGIN_STATE_COOKIE, '', { ...gone, httpOnly: true, path: '/auth' }),
      req.server.serializeCookie(CONFIRM_COOKIE, '', { ...gone, httpOnly: true, path: '/auth/callback' }),
    ])

  /** This browser's session and CSRF cookies cleared (sign-out). */
  const signedOut = (req: FastifyRequest, reply: FastifyReply) =>
    reply
      .header('Set-Cookie', [
        req.server.serializeCookie(SESSION_COOKIE, '', { ...gone, sameSite: 'lax', httpOnly: true }),
        req.server.serializeCookie(CSRF_COOKIE, '', { ...gone, sameSite: 'strict' }),
      ])
      .header('Cache-Control', 'no-store')
  return { secure, signedIn, signedOut }
}

/**
 * Passwordless sign-in: the link is asked for, opened (in the browser that asked for it, or
 * confirmed on a page in another), and becomes a session.
 */
function signInRoutes(ctx: ServiceContext, { secure, signedIn }: SessionCookies): RouteTable {
  const origin = new URL(ctx.config.publicUrl).origin
  return {
    login: async (req, reply) => {
      const b = req.body
      // The operation's own limits, per address and per recipient: the headers report the tighter.
      const byIp = await takeIpToken(ctx, 'login', req.ip)
      setRateHeaders(reply, tighter(byIp, await takeRecipientToken(ctx, normaliseEmail(b.email))))
      // A post from another site gets no state: its link then asks for confirmation wherever it is opened.
      const state = fromAnotherSite(req, origin) ? null : loginState(cookieOf(req, LOGIN_STATE_COOKIE))
      await requestLogin(ctx, b.email, b.next, state)
      if (state !== null)
        reply.header(
          'Set-Cookie',
          req.server.serializeCookie(LOGIN_STATE_COOKIE, state, {
            httpOnly: true,
            secure,
            sameSite: 'lax',
            path: '/auth',
            maxAge: LINK_TTL_S,
          }),
        )
      reply.code(202)
      return {
        status: 'sent',
        expires_in: LINK_TTL_S,
        detail: 'If the address can receive mail, a sign-in link is on its way.',
      }
    },
    loginCallback: async (req, reply) => {
      const q = req.query
      const pending = await findLogin(ctx, q.token, cookieOf(req, LOGIN_STATE_COOKIE))
      if (!pending.sameBrowser) {
        // Not the browser that asked: a page that names the account; the link stays unused.
        const nonce = loginState(cookieOf(req, CONFIRM_COOKIE))
        reply.header(
          'Set-Cookie',
          req.server.serializeCookie(CONFIRM_COOKIE, nonce, {
            httpOnly: true,
            secure,
            sameSite: 'strict',
            path: '/auth/callback',
            maxAge: LINK_TTL_S,
          }),
        )
        const next = safeNext(q.next, ctx.config.publicUrl)
        const csrf = confirmToken(ctx, nonce, q.token)
        return sendPage(reply, confirmLoginPage({ email: pending.email, token: q.token, next, csrf }))
      }
      const done = await completeLogin(ctx, q.token, q.next, { ip: req.ip ?? null, via: 'link' })
      signedIn(req, reply, done.sessionJwt)
      if (done.next) return reply.redirect(done.next, 303)
      return sessionBody(done)
    },
    confirmLogin: async (req, reply) => {
      if (fromAnotherSite(req, origin))
        throw new AppError('FORBIDDEN', 'A sign-in link can only be confirmed from this site’s own page')
      const b = req.body
      if (!/^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '')) {
        // A program posting JSON (a browser cannot send JSON to another site without its consent):
        // the session JWT, and no cookie.
        const done = await completeLogin(ctx, b.token, b.next, { ip: req.ip ?? null, via: 'api' })
        reply.header('Cache-Control', 'no-store')
        return sessionBody(done)
      }
      if (!confirmTokenValid(ctx, cookieOf(req, CONFIRM_COOKIE), b.token, b.csrf_token))
        throw new AppError(
          'FORBIDDEN',
          'This confirmation form is not valid (expired, or not sent from the page this browser was shown): open the link again',
        )
      const done = await completeLogin(ctx, b.token, b.next, { ip: req.ip ?? null, via: 'confirmation' })
      return signedIn(req, reply, done.sessionJwt).redirect(done.next ?? DEFAULT_NEXT, 303)
    },
  }
}

/** The signed-in session: who it is, and signing out (this browser, or every session). */
function sessionRoutes(ctx: ServiceContext, { signedOut }: SessionCookies): RouteTable {
  return {
    getSession: async (req) => {
      const s = requireSession(req.session)
      return {
        account_id: s.accountId,
        email: s.email,
        features: { card_top_ups: ctx.config.stripe !== null, brokerage: ctx.config.plaid !== null },
      }
    },
    dashboardKey: async (req, reply) => {
      const k = await dashboardKey(ctx, requireSession(req.session), sessionActor(req))
      reply.header('Cache-Control', 'no-store')
      return {
        api_key: k.apiKey,
        key_id: k.record.id,
        environment: k.record.environment,
        created_at: iso(k.record.createdAt),
        account_id: k.record.accountId,
        expires_at: k.record.expiresAt === null ? null : iso(k.record.expiresAt),
      }
    },
    logout: async (req, reply) => {
      const s = requireSession(req.session)
      await signOut(ctx, s, sessionActor(req))
      await revokeDashboardKey(ctx, s.sessionId)
      return signedOut(req, reply).code(204).send()
    },
    logoutAll: async (req, reply) => {
      const s = requireSession(req.session)
      const n = await signOutEverywhere(ctx, s, sessionActor(req))
      await revokeDashboardKeys(ctx, s.accountId)
      signedOut(req, reply)
      return { signed_out_sessions: n }
    },
  }
}

/** API keys for a signed-in account, and the free key (per address and per day). */
function keyRoutes(ctx: ServiceContext, metrics: EdgeMetrics): RouteTable {
  const freeCap = freeProvisionCap(ctx, metrics.freeProvisionRefused)
  return {
    provision: async (req, reply) => {
      const b = req.body ?? {}
      const k = await provisionKey(
        ctx,
        requireSession(req.session),
        { ...b, environment: b.environment ?? 'live' },
        req.ip ?? null,
      )
      reply.code(201).header('Cache-Control', 'no-store')
      return {
        api_key: k.apiKey,
        key_id: k.record.id,
        environment: k.record.environment,
        created_at: iso(k.record.createdAt),
        account_id: k.record.accountId,
        expires_at: k.record.expiresAt === null ? null : iso(k.record.expiresAt),
      }
    },
    provisionFree: async (req, reply) => {
      setRateHeaders(reply, await takeIpToken(ctx, 'provisionFree', req.ip))
      // Last of the checks: a request refused by its address's limit spends none of the day's keys.
      await freeCap.take()
      const b = req.body ?? {}
      const k = await provisionFree(ctx, b)
      reply.code(201).header('Cache-Control', 'no-store')
      return {
        api_key: k.apiKey,
        key_id: k.record.id,
        environment: 'live',
        created_at: iso(k.record.createdAt),
        account_id: k.record.accountId,
        balance_usd: microsToUsd(k.balanceMicros),
      }
    },
  }
}
