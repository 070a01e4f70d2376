import { newId } from '../../platform/ids.ts'
import type { ActorType } from '../../store/accounts/self-service-types.ts'
import type { ServiceContext } from '../context.ts'

/** Who made a change to an account, for its audit log. */
export interface AuditActor {
  accountId: string
  type: ActorType
  /** Session e-mail, key id, the operator tool (`cli`), or an OAuth client id. */
  id: string
  /** Client address of the request (null for the operator CLI). */
  ip: string | null
}

/**
 * Appends one change (key.created, key.renamed, key.rotated, key.revoked, spend_cap.set,
 * oauth.approved, oauth.token_revoked, oauth.grant_revoked …) to the log.
 */
export async function recordAudit(
  ctx: Pick<ServiceContext, 'accounts' | 'now'>,
  actor: AuditActor,
  action: string,
  target: string | null,
  detail: Record<string, unknown> | null,
): Promise<void> {
  const now = ctx.now()
  await ctx.accounts.selfService().appendAudit({
    id: newId('aud', now),
    accountId: actor.accountId,
    createdAt: now,
    actorType: actor.type,
    actorId: actor.id,
    action,
    target,
    detail,
    ip: actor.ip,
  })
}

/** The operator CLI as an actor. */
export const operatorActor = (accountId: string): AuditActor => ({
  accountId,
  type: 'operator',
  id: 'cli',
  ip: null,
})

/** An OAuth client acting on a grant of the account (token or revocation endpoint). */
export const clientActor = (accountId: string, clientId: string, ip: string | null): AuditActor => ({
  accountId,
  type: 'client',
  id: clientId,
  ip,
})
