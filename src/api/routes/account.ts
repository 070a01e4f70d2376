import type { FastifyReply, FastifyRequest } from 'fastify'
import { TABULAR_MEDIA_TYPES } from '../../contract/table.ts'
import { encodeTableCsv, encodeTableParquet } from '../../engine/export/tabular.ts'
import {
  auditView,
  createKey,
  ledgerTable,
  ledgerView,
  listKeys,
  renameKey,
  revokeKey,
  rotateKey,
  settingsView,
  updateSettings,
  usageView,
} from '../../services/account/self-service.ts'
import type { ServiceContext } from '../../services/context.ts'
import { recordAudit } from '../../services/identity/audit.ts'
import { listGrants, revokeGrant } from '../../services/oauth/grants.ts'
import * as webhooks from '../../services/webhooks/subscriptions.ts'
import { negotiateFormat } from '../negotiate.ts'
import { requireSession, sessionActor } from '../request-state.ts'
import { type RouteDeps, type RouteFile, type RouteTable, routeFile } from './types.ts'

/** The account of a read: the presented key's, or the session's (`key_or_session` routes). */
function accountOf(req: FastifyRequest): string {
  if (req.principal) return req.principal.accountId
  return requireSession(req.session).accountId
}

/**
 * /account/*: the signed-in account's keys, usage, ledger, settings and audit log (read-only views
 * also with the account's own key), its webhook subscriptions and balance alert, and its OAuth
 * grants. Every change a session makes lands in the account's audit log (who, what, when, from
 * which IP).
 */
export function accountRoutes({ ctx }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    ...accountViewRoutes(ctx),
    ...webhookRoutes(ctx),
    ...grantRoutes(ctx),
  })
}

const noStore = (reply: FastifyReply) => reply.header('Cache-Control', 'no-store')

/** The account's keys, usage, ledger, settings and audit log. */
function accountViewRoutes(ctx: ServiceContext): RouteTable {
  return {
    listAccountKeys: async (req, reply) => {
      noStore(reply)
      return listKeys(ctx, accountOf(req))
    },
    createAccountKey: async (req, reply) => {
      const out = await createKey(ctx, sessionActor(req), req.body)
      noStore(reply).code(201)
      return out
    },
    renameAccountKey: async (req, reply) => {
      noStore(reply)
      return renameKey(ctx, sessionActor(req), req.params.id, req.body.name)
    },
    rotateAccountKey: async (req, reply) => {
      const out = await rotateKey(ctx, sessionActor(req), req.params.id, req.body.overlap_seconds ?? 0)
      noStore(reply).code(201)
      return out
    },
    revokeAccountKey: async (req, reply) => {
      noStore(reply)
      return revokeKey(ctx, sessionActor(req), req.params.id)
    },
    getAccountUsage: async (req, reply) => {
      const q = req.query
      noStore(reply)
      return usageView(ctx, accountOf(req), q.from, q.to)
    },
    getAccountLedger: async (req, reply) => {
      const q = req.query
      const format = negotiateFormat(req, true)
      const view = await ledgerView(ctx, accountOf(req), { from: q.from, to: q.to, limit: q.limit ?? 1000 })
      noStore(reply)
      if (format === 'json') return view
      const table = ledgerTable(view)
      reply.header('Content-Type', TABULAR_MEDIA_TYPES[format])
      reply.header(
        'Content-Disposition',
        `attachment; filename="erm3-ledger-${view.from}-${view.to}.${format}"`,
      )
      return reply.send(
        format === 'csv'
          ? Buffer.from(encodeTableCsv(table), 'utf8')
          : Buffer.from(encodeTableParquet(table)),
      )
    },
    getAccountSettings: async (req, reply) => {
      noStore(reply)
      return settingsView(ctx, accountOf(req))
    },
    updateAccountSettings: async (req, reply) => {
      noStore(reply)
      return updateSettings(ctx, sessionActor(req), req.body)
    },
    getAccountAudit: async (req, reply) => {
      const q = req.query
      noStore(reply)
      return auditView(ctx, accountOf(req), { from: q.from, to: q.to, limit: q.limit ?? 100 })
    },
  }
}

/** The account's webhook subscriptions and balance alert; every change is audited. */
function webhookRoutes(ctx: ServiceContext): RouteTable {
  const audit = (
    req: FastifyRequest,
    action: string,
    target: string | null,
    detail: Record<string, unknown> | null = null,
  ) => recordAudit(ctx, sessionActor(req), action, target, detail)
  return {
    listWebhooks: async (req) => webhooks.listSubscriptions(ctx, requireSession(req.session)),
    createWebhook: async (req, reply) => {
      const out = await webhooks.createSubscription(ctx, requireSession(req.session), req.body)
      await audit(req, 'webhook.created', out.id, { url: out.url, events: out.events })
      reply.code(201).header('Cache-Control', 'no-store')
      return out
    },
    getWebhook: async (req) => webhooks.getSubscription(ctx, requireSession(req.session), req.params.id),
    updateWebhook: async (req) => {
      const id = req.params.id
      const change = req.body
      const out = await webhooks.updateSubscription(ctx, requireSession(req.session), id, change)
      await audit(req, 'webhook.updated', id, change)
      return out
    },
    deleteWebhook: async (req) => {
      const id = req.params.id
      const out = await webhooks.deleteSubscription(ctx, requireSession(req.session), id)
      await audit(req, 'webhook.deleted', id)
      return out
    },
    rotateWebhookSecret: async (req, reply) => {
      const out = await webhooks.rotateSecret(ctx, requireSession(req.session), req.params.id)
      await audit(req, 'webhook.secret_rotated', req.params.id)
      reply.header('Cache-Control', 'no-store')
      return out
    },
    testWebhook: async (req, reply) => {
      const out = await webhooks.sendTestEvent(ctx, requireSession(req.session), req.params.id)
      reply.code(202)
      return out
    },
    listWebhookDeliveries: async (req) =>
      webhooks.listDeliveries(ctx, requireSession(req.session), req.params.id, req.query.limit ?? 50),
    redeliverWebhook: async (req, reply) => {
      const p = req.params
      const out = await webhooks.redeliver(ctx, requireSession(req.session), p.id, p.delivery_id)
      reply.code(202)
      return out
    },
    getBalanceAlert: async (req) => webhooks.getBalanceAlert(ctx, requireSession(req.session)),
    setBalanceAlert: async (req) => {
      const threshold = req.body.threshold_usd
      const out = await webhooks.setBalanceAlert(ctx, requireSession(req.session), threshold)
      await audit(req, 'balance_alert.set', null, { threshold_usd: threshold })
      return out
    },
  }
}

/** The OAuth clients the account has granted access to, and revoking them. */
function grantRoutes(ctx: ServiceContext): RouteTable {
  return {
    listOAuthGrants: async (req, reply) => {
      reply.header('Cache-Control', 'no-store')
      return listGrants(ctx, requireSession(req.session).accountId)
    },
    revokeOAuthGrant: async (req, reply) => {
      reply.header('Cache-Control', 'no-store')
      return revokeGrant(ctx, sessionActor(req), req.params.client_id)
    },
  }
}
