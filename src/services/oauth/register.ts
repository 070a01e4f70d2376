import { newId } from '../../platform/ids.ts'
import type { OAuthClient } from '../../store/oauth/types.ts'
import type { ServiceContext } from '../context.ts'
import { oauthStore } from './common.ts'
import { oauthError } from './errors.ts'

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])

/**
 * RFC 7591 §2: absolute, no fragment, no user info; https anywhere, http only on a
 * loopback host (RFC 8252 §7.3 native apps). Returns a reason, or null when acceptable.
 */
function redirectUriProblem(raw: string): string | null {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    return 'is not an absolute URI'
  }
  if (raw.includes('#')) return 'must not contain a fragment'
  if (u.username || u.password) return 'must not contain user information'
  if (u.protocol === 'https:') return null
  if (u.protocol === 'http:')
    return LOOPBACK_HOSTS.has(u.hostname) ? null : 'may use http only for 127.0.0.1, [::1] or localhost'
  return 'must use https (or http on a loopback host)'
}

export interface RegistrationRequest {
  client_name?: string
  redirect_uris: string[]
}

/** Registers a public client. Other metadata a client sends is ignored (RFC 7591 §2). */
export async function registerClient(ctx: ServiceContext, req: RegistrationRequest): Promise<OAuthClient> {
  for (const uri of req.redirect_uris) {
    const problem = redirectUriProblem(uri)
    if (problem) throw oauthError('invalid_redirect_uri', `redirect_uri ${JSON.stringify(uri)} ${problem}`)
  }
  const name = req.client_name?.trim() || 'Unnamed client'
  const client = await oauthStore(ctx).registerClient({
    clientId: newId('client'),
    clientName: name,
    redirectUris: [...new Set(req.redirect_uris)],
    createdAt: ctx.now(),
  })
  ctx.log.info({ client_id: client.clientId }, 'oauth client registered')
  return client
}
