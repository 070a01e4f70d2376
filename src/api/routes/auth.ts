import type { FastifyReply, FastifyRequest } from 'fastify'
import { microsToUsd } from '../../contract/pricing.ts'
import type { ServiceContext } from '../../services/context.ts'
import { freeProvisionCap } from '../../services/identity/free-cap.ts'
import { completeLogin, normaliseEmail, requestLogin } from '../../services/identity/login.ts'
import { provisionFree, provisionKey } from '../../services/identity/provision.ts'
import { SESSION_TTL_S } from '../../services/identity/session.ts'
import { takeIpToken, takeRecipientToken, tighter } from '../../services/limits.ts'
import { CSRF_COOKIE, csrfTokenFor, SESSION_COOKIE } from '../auth-hook.ts'
import { setRateHeaders } from '../problem.ts'
import type { EdgeMetrics } from '../prom.ts'
import { requireSession } from '../request-state.ts'
import type { RouteTable } from './types.ts'

const iso = (ms: number) => new Date(ms).toISOString()

export function authRoutes(ctx: ServiceContext, metrics: EdgeMetrics): RouteTable {
  const secure = ctx.config.publicUrl.startsWith('https:')
  const freeCap = freeProvisionCap(ctx, metrics.freeProvisionRefused)
  return {
    login: async (req, reply) => {
      const b = req.body as { email: string; next?: string }
      // The operation's own limits, per address and per recipient: the headers report the tighter.
      const byIp = await takeIpToken(ctx, 'login', req.ip)
      setRateHeaders(reply, tighter(byIp, await takeRecipientToken(ctx, normaliseEmail(b.email))))
      await requestLogin(ctx, b.email, b.next)
      reply.code(202)
      return {
        status: 'sent',
        expires_in: 900,
        detail: 'If the address can receive mail, a sign-in link is on its way.',
      }
    },
    loginCallback: async (req: FastifyRequest, reply: FastifyReply) => {
      const q = req.query as { token: string; next?: string }
      const done = await completeLogin(ctx, q.token, q.next)
      reply.header('Set-Cookie', [
        req.server.serializeCookie(SESSION_COOKIE, done.sessionJwt, {
          httpOnly: true,
          secure,
          sameSite: 'lax',
          path: '/',
          maxAge: SESSION_TTL_S,
        }),
        // Read by the dashboard and echoed in X-CSRF-Token on every change it makes.
        req.server.serializeCookie(CSRF_COOKIE, csrfTokenFor(done.sessionJwt), {
          httpOnly: false,
          secure,
          sameSite: 'strict',
          path: '/',
          maxAge: SESSION_TTL_S,
        }),
      ])
      reply.header('Cache-Control', 'no-store')
      if (done.next) return reply.redirect(done.next, 303)
      return {
        session_jwt: done.sessionJwt,
        token_type: 'Bearer',
        expires_in: done.expiresIn,
        account_id: done.accountId,
        email: done.email,
      }
    },
    provision: async (req, reply) => {
      const b = req.body as { name?: string; environment: 'live' | 'test'; expires_in_seconds?: number }
      const k = await provisionKey(ctx, requireSession(req.session), b, req.ip ?? null)
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
    getSession: async (req) => {
      const s = requireSession(req.session)
      return { account_id: s.accountId, email: s.email }
    },
    logout: async (req, reply) => {
      requireSession(req.session)
      const gone = { secure, sameSite: 'lax' as const, path: '/', maxAge: 0 }
      return reply
        .code(204)
        .header('Set-Cookie', [
          req.server.serializeCookie(SESSION_COOKIE, '', { ...gone, httpOnly: true }),
          req.server.serializeCookie(CSRF_COOKIE, '', { ...gone, sameSite: 'strict' }),
        ])
        .header('Cache-Control', 'no-store')
        .send()
    },
    provisionFree: async (req, reply) => {
      setRateHeaders(reply, await takeIpToken(ctx, 'provisionFree', req.ip))
      // Last of the checks: a request refused by its address's limit spends none of the day's keys.
      await freeCap.take()
      const b = (req.body ?? {}) as { name?: string }
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
