import { readFile } from 'node:fs/promises'
import type { ServiceContext } from '../../services/context.ts'
import { recordAudit } from '../../services/identity/audit.ts'
import * as webhooks from '../../services/webhooks/subscriptions.ts'
import { requireSession, sessionActor } from '../request-state.ts'
import type { RouteTable } from './types.ts'

type IdParams = { id: string }

const DOC = new URL('../../../docs/webhooks.md', import.meta.url)

/** Webhook subscriptions and the balance alert of the signed-in account (session-authenticated). */
export function webhookRoutes(ctx: ServiceContext): RouteTable {
  let doc: string | null = null
  /** Every change lands in the account's audit log (who, what, when, from which IP). */
  const audit = (
    req: Parameters<RouteTable[string]>[0],
    action: string,
    target: string | null,
    detail: Record<string, unknown> | null = null,
  ) => recordAudit(ctx, sessionActor(req), action, target, detail)
  return {
    getWebhookDocs: async (_req, reply) => {
      doc ??= await readFile(DOC, 'utf8')
      return reply.header('Content-Type', 'text/markdown; charset=utf-8').send(doc)
    },
    listWebhooks: async (req) => webhooks.listSubscriptions(ctx, requireSession(req.session)),
    createWebhook: async (req, reply) => {
      const b = req.body as { url: string; events: string[] }
      const out = await webhooks.createSubscription(ctx, requireSession(req.session), b)
      await audit(req, 'webhook.created', out.id, { url: out.url, events: out.events })
      reply.code(201).header('Cache-Control', 'no-store')
      return out
    },
    getWebhook: async (req) =>
      webhooks.getSubscription(ctx, requireSession(req.session), (req.params as IdParams).id),
    updateWebhook: async (req) => {
      const id = (req.params as IdParams).id
      const change = req.body as { url?: string; events?: string[]; enabled?: boolean }
      const out = await webhooks.updateSubscription(ctx, requireSession(req.session), id, change)
      await audit(req, 'webhook.updated', id, change)
      return out
    },
    deleteWebhook: async (req) => {
      const id = (req.params as IdParams).id
      const out = await webhooks.deleteSubscription(ctx, requireSession(req.session), id)
      await audit(req, 'webhook.deleted', id)
      return out
    },
    rotateWebhookSecret: async (req, reply) => {
      const out = await webhooks.rotateSecret(ctx, requireSession(req.session), (req.params as IdParams).id)
      await audit(req, 'webhook.secret_rotated', (req.params as IdParams).id)
      reply.header('Cache-Control', 'no-store')
      return out
    },
    testWebhook: async (req, reply) => {
      const out = await webhooks.sendTestEvent(ctx, requireSession(req.session), (req.params as IdParams).id)
      reply.code(202)
      return out
    },
    listWebhookDeliveries: async (req) =>
      webhooks.listDeliveries(
        ctx,
        requireSession(req.session),
        (req.params as IdParams).id,
        (req.query as { limit?: number }).limit ?? 50,
      ),
    redeliverWebhook: async (req, reply) => {
      const p = req.params as { id: string; delivery_id: string }
      const out = await webhooks.redeliver(ctx, requireSession(req.session), p.id, p.delivery_id)
      reply.code(202)
      return out
    },
    getBalanceAlert: async (req) => webhooks.getBalanceAlert(ctx, requireSession(req.session)),
    setBalanceAlert: async (req) => {
      const threshold = (req.body as { threshold_usd: number }).threshold_usd
      const out = await webhooks.setBalanceAlert(ctx, requireSession(req.session), threshold)
      await audit(req, 'balance_alert.set', null, { threshold_usd: threshold })
      return out
    },
  }
}
