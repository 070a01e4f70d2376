import type { FastifyRequest } from 'fastify'
import type { Operation } from '../contract/operation.ts'
import type { AppError } from '../platform/errors.ts'
import type { Actor } from '../services/account/self-service.ts'
import type { Principal } from '../services/identity/keys.ts'
import type { Session } from '../services/identity/session.ts'
import type { KeySlot } from '../services/limits.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on `auth: 'key'` operations. */
    principal: Principal | null
    /** Set by the auth hook on `auth: 'session'` operations. */
    session: Session | null
    /** `rateLimitInBand` operations: the refusal the handler must deliver (the token was not granted). */
    rateLimited: AppError | null
    /** The concurrency slot an `auth: 'key'` request holds until its response closes. */
    slot: KeySlot | null
    /** performance.now() at arrival, for `_agent.latency_ms`. */
    startedAt: number
    /** The request body's exact bytes, on `rawBody` operations only (signature verification). */
    rawBody: Buffer | null
  }
  interface FastifyContextConfig {
    op?: Operation
  }
}

export function requirePrincipal(p: Principal | null): Principal {
  if (!p) throw new Error('route declared auth: key but no principal was set')
  return p
}

export function requireSession(s: Session | null): Session {
  if (!s) throw new Error('route declared auth: session but no session was set')
  return s
}

/** The signed-in user making a change, for the account's audit log (session routes only). */
export function sessionActor(req: FastifyRequest): Actor {
  const s = requireSession(req.session)
  return { accountId: s.accountId, type: 'session', id: s.email, ip: req.ip ?? null }
}
