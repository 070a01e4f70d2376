import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ServiceContext } from '../../services/context.ts'
import { type Session, verifySession } from '../../services/identity/session.ts'
import { takeIpToken } from '../../services/limits.ts'
import {
  type AuthorizationParams,
  approve,
  checkAuthorization,
  consentToken,
  consentTokenValid,
  deny,
} from '../../services/oauth/authorize.ts'
import { oauthError } from '../../services/oauth/errors.ts'
import { consentPage, errorPage, signInPage } from '../../services/oauth/pages.ts'
import { registerClient } from '../../services/oauth/register.ts'
import { exchangeToken, revokeToken } from '../../services/oauth/token.ts'
import { cookieOf, SESSION_COOKIE } from '../auth-hook.ts'
import { sendPage } from '../pages.ts'
import { setRateHeaders } from '../problem.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

const PARAM_NAMES = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'resource',
] as const

/** Only the authorization parameters, and only string values (a repeated parameter is dropped). */
function authorizationParams(raw: unknown): AuthorizationParams {
  const src = (raw ?? {}) as Record<string, unknown>
  const out: AuthorizationParams = {}
  for (const k of PARAM_NAMES) if (typeof src[k] === 'string') out[k] = src[k]
  return out
}

function redirect(reply: FastifyReply, location: string, status: 302 | 303): FastifyReply {
  return reply
    .header('Cache-Control', 'no-store')
    .header('Referrer-Policy', 'no-referrer')
    .redirect(location, status)
}

/** The browser's session (cookie only: consent is a browser act), or null when absent or invalid. */
async function cookieSession(
  ctx: ServiceContext,
  req: FastifyRequest,
): Promise<{ token: string; session: Session } | null> {
  const token = cookieOf(req, SESSION_COOKIE)
  if (!token) return null
  try {
    return { token, session: await verifySession(ctx, token) }
  } catch {
    return null
  }
}

/** The GET form of an authorization request, for `next` after sign-in (a same-site path). */
function authorizeUrl(params: AuthorizationParams): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) q.set(k, v as string)
  return `/oauth/authorize?${q}`
}

function requireForm(req: FastifyRequest): void {
  if (!/^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? ''))
    throw oauthError(
      'invalid_request',
      'Send the parameters form-encoded (application/x-www-form-urlencoded)',
    )
}

const noStore = (reply: FastifyReply) =>
  reply.header('Cache-Control', 'no-store').header('Pragma', 'no-cache')

/** /oauth/*: client registration, authorization (pages and consent), token and revocation. */
export function oauthRoutes({ ctx }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    oauthRegister: async (req, reply) => {
      setRateHeaders(reply, await takeIpToken(ctx, 'oauthRegister', req.ip))
      const c = await registerClient(ctx, req.body)
      noStore(reply).code(201)
      return {
        client_id: c.clientId,
        client_name: c.clientName,
        redirect_uris: c.redirectUris,
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        client_id_issued_at: Math.floor(c.createdAt / 1000),
      }
    },
    oauthAuthorize: async (req, reply) => {
      const params = authorizationParams(req.query)
      const check = await checkAuthorization(ctx, params)
      if (check.kind === 'page') return sendPage(reply, errorPage(400, check.message))
      if (check.kind === 'redirect') return redirect(reply, check.location, 302)
      const signedIn = await cookieSession(ctx, req)
      // The request exactly as the client built it (extra parameters such as `resource` kept).
      if (!signedIn) return sendPage(reply, signInPage(req.url, check.request.client.clientName))
      const csrf = consentToken(ctx, signedIn.token, check.request)
      return sendPage(reply, consentPage(check.request, params, csrf, signedIn.session.email))
    },
    oauthAuthorizeDecision: async (req, reply) => {
      const body = req.body
      const params = authorizationParams(body)
      const check = await checkAuthorization(ctx, params)
      if (check.kind === 'page') return sendPage(reply, errorPage(400, check.message))
      if (check.kind === 'redirect') return redirect(reply, check.location, 303)
      const signedIn = await cookieSession(ctx, req)
      if (!signedIn)
        return sendPage(reply, signInPage(authorizeUrl(params), check.request.client.clientName, 401))
      const csrf = typeof body.csrf_token === 'string' ? body.csrf_token : undefined
      // A forged or cross-site post: refuse, and tell the client nothing (no redirect).
      if (!consentTokenValid(ctx, signedIn.token, check.request, csrf))
        return sendPage(
          reply,
          errorPage(403, 'This consent form is not valid (expired, or not submitted from erm3).'),
        )
      const location =
        body.decision === 'approve'
          ? await approve(ctx, signedIn.session, check.request, req.ip ?? null)
          : deny(ctx, check.request)
      return redirect(reply, location, 303)
    },
    oauthToken: async (req, reply) => {
      setRateHeaders(reply, await takeIpToken(ctx, 'oauthToken', req.ip))
      requireForm(req)
      const tokens = await exchangeToken(ctx, req.body, req.ip ?? null)
      noStore(reply)
      return tokens
    },
    oauthRevoke: async (req, reply) => {
      setRateHeaders(reply, await takeIpToken(ctx, 'oauthToken', req.ip))
      requireForm(req)
      await revokeToken(ctx, req.body.token, req.ip ?? null)
      noStore(reply)
      return {}
    },
  })
}
