import { newId } from '../../platform/ids.ts'
import type { OAuthClient } from '../../store/oauth/types.ts'
import type { ServiceContext } from '../context.ts'
import { oauthStore } from './common.ts'
import { oauthError } from './errors.ts'

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])

/**
 * Schemes that are never a native app's private-use redirect: ones a browser runs or reads itself
 * (script, inline data, local files, blobs) and the registered network schemes, which are https
 * (or loopback http) or nothing.
 */
const REFUSED_SCHEMES = new Set([
  'javascript',
  'vbscript',
  'data',
  'file',
  'blob',
  'filesystem',
  'about',
  'view-source',
  'ftp',
  'ftps',
  'ws',
  'wss',
  'mailto',
  'tel',
  'sms',
])

/**
 * RFC 7591 §2: absolute, no fragment, no user info; https anywhere, http only on a loopback host
 * (RFC 8252 §7.3), or a native app's private-use scheme (RFC 8252 §7.1: `com.example.app:/cb`,
 * `cursor://…`, `vscode://…`). Every redirect URI is later matched exactly, character for
 * character (authorize.ts). Returns a reason, or null when acceptable.
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
  const scheme = u.protocol.slice(0, -1)
  if (REFUSED_SCHEMES.has(scheme) || !raw.toLowerCase().startsWith(`${scheme}:`))
    return "must use https, http on a loopback host, or an application's private-use scheme"
  return null
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
