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
import { negotiateFormat } from '../negotiate.ts'
import { requireSession, sessionActor } from '../request-state.ts'
import type { RouteTable } from './types.ts'

/** The account of a read: the presented key's, or the session's (`key_or_session` routes). */
function accountOf(req: FastifyRequest): string {
  if (req.principal) return req.principal.accountId
  return requireSession(req.session).accountId
}

type Q = { from?: string; to?: string; limit?: number }
const idOf = (req: FastifyRequest) => (req.params as { id: string }).id

export function selfServiceRoutes(ctx: ServiceContext): RouteTable {
  const noStore = (reply: FastifyReply) => reply.header('Cache-Control', 'no-store')
  return {
    listAccountKeys: async (req, reply) => {
      noStore(reply)
      return listKeys(ctx, accountOf(req))
    },
    createAccountKey: async (req, reply) => {
      const b = req.body as { name?: string; environment: 'live' | 'test' }
      const out = await createKey(ctx, sessionActor(req), b)
      noStore(reply).code(201)
      return out
    },
    renameAccountKey: async (req, reply) => {
      const b = req.body as { name: string | null }
      noStore(reply)
      return renameKey(ctx, sessionActor(req), idOf(req), b.name)
    },
    rotateAccountKey: async (req, reply) => {
      const b = (req.body ?? {}) as { overlap_seconds?: number }
      const out = await rotateKey(ctx, sessionActor(req), idOf(req), b.overlap_seconds ?? 0)
      noStore(reply).code(201)
      return out
    },
    revokeAccountKey: async (req, reply) => {
      noStore(reply)
      return revokeKey(ctx, sessionActor(req), idOf(req))
    },
    getAccountUsage: async (req, reply) => {
      const q = req.query as Q
      noStore(reply)
      return usageView(ctx, accountOf(req), q.from, q.to)
    },
    getAccountLedger: async (req, reply) => {
      const q = req.query as Q
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
      return updateSettings(ctx, sessionActor(req), req.body as { spend_cap_usd?: number | null })
    },
    getAccountAudit: async (req, reply) => {
      const q = req.query as Q
      noStore(reply)
      return auditView(ctx, accountOf(req), { from: q.from, to: q.to, limit: q.limit ?? 100 })
    },
  }
}
