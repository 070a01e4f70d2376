import { newId } from '../platform/ids.ts'
import type { ServiceContext } from '../services/context.ts'
import type { Principal } from '../services/identity/keys.ts'

/** An idle session is forgotten after this (clients initialise again on the 404). */
export const SESSION_IDLE_MS = 30 * 60_000
/** A session in use has its shared record's lifetime renewed at most this often (one write). */
const RENEW_MS = 60_000
/** Sessions this node remembers on its own (the shared record is the truth; see `find`). */
const LOCAL_MAX = 10_000
const CLOSED = 'closed'

interface Owner {
  accountId: string
  environment: Principal['environment']
}

interface Local extends Owner {
  lastSeen: number
  renewedAt: number
}

/**
 * The Streamable HTTP sessions of every node: which account (and environment) opened each one.
 * A session is a record in the limits backend's shared store (Redis when nodes scale out,
 * in-process otherwise), so a client that initialised on one node goes on on any other; a session
 * ended on one node (DELETE) is a `closed` record every node sees. Nothing else of a session lives
 * anywhere: each message is served by a fresh MCP server (mcp/http.ts).
 *
 * Each node also remembers the sessions it opened or served: when the shared record is missing
 * (Redis restarted, or an in-process cache evicted it) the session still works on those nodes.
 */
export function sessionRegistry(ctx: Pick<ServiceContext, 'limits' | 'now' | 'log'>) {
  const local = new Map<string, Local>()
  /** Sessions ended through this node (and when): a lookup still in flight must not revive one. */
  const ended = new Map<string, number>()
  const keyOf = (id: string) => `mcp-session:${id}`
  const remember = (id: string, l: Local) => {
    local.delete(id)
    local.set(id, l)
    if (local.size > LOCAL_MAX) local.delete(local.keys().next().value as string)
  }
  const share = (id: string, value: string) =>
    ctx.limits.cache.set(keyOf(id), Buffer.from(value), SESSION_IDLE_MS).catch((e: Error) => {
      ctx.log.warn({ err: e.message }, 'mcp session: the shared record could not be written')
    })
  const shared = async (id: string): Promise<Owner | typeof CLOSED | null> => {
    const b = await ctx.limits.cache.get(keyOf(id)).catch(() => null)
    if (!b) return null
    const s = b.toString()
    return s === CLOSED ? CLOSED : (JSON.parse(s) as Owner)
  }
  return {
    /** Sessions this node knows of. */
    get size() {
      return local.size
    },
    async open(p: Principal): Promise<string> {
      const id = newId('mcp')
      const now = ctx.now()
      const owner: Owner = { accountId: p.accountId, environment: p.environment }
      remember(id, { ...owner, lastSeen: now, renewedAt: now })
      await share(id, JSON.stringify(owner))
      return id
    },
    /** Whether `id` is an open session of `p`'s account and environment (another's is unknown). */
    async find(id: string, p: Principal): Promise<boolean> {
      const rec = await shared(id)
      if (rec === CLOSED || ended.has(id)) {
        local.delete(id)
        return false
      }
      const mine = local.get(id)
      const owner = rec ?? mine
      if (!owner || owner.accountId !== p.accountId || owner.environment !== p.environment) return false
      const now = ctx.now()
      const renew = !mine || rec === null || now - mine.renewedAt >= RENEW_MS
      remember(id, { ...owner, lastSeen: now, renewedAt: renew ? now : (mine?.renewedAt ?? now) })
      if (renew)
        await share(id, JSON.stringify({ accountId: owner.accountId, environment: owner.environment }))
      return true
    },
    async close(id: string): Promise<void> {
      local.delete(id)
      ended.set(id, ctx.now())
      if (ended.size > LOCAL_MAX) ended.delete(ended.keys().next().value as string)
      await share(id, CLOSED)
    },
    /** Forgets what this node remembers of sessions idle for SESSION_IDLE_MS. */
    sweep(): void {
      const cutoff = ctx.now() - SESSION_IDLE_MS
      for (const [id, s] of local) if (s.lastSeen < cutoff) local.delete(id)
      for (const [id, at] of ended) if (at < cutoff) ended.delete(id)
    },
  }
}
