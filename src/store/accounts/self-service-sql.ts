/**
 * Row shapes and mappings of the self-service tables, shared by both dialects. SQL text differs
 * only in placeholders, so each implementation writes its own statements.
 */
import type { AuditEntry, DebitGroup, NonDebitEntry, UsageRow } from './self-service-types.ts'
import type { Environment } from './types.ts'

export interface UsageDbRow {
  account_id: string
  day: number
  capability: string
  environment: string
  requests: number
  cache_hits: number
  cost_micros: number
}

export interface DebitGroupRow {
  day: number
  capability: string | null
  n: number
  amount: number
}

export interface NonDebitRow {
  id: string
  kind: string
  amount_micros: number
  reference: string | null
  created_at: number
}

export interface AuditRow {
  id: string
  account_id: string
  created_at: number
  actor_type: string
  actor_id: string
  action: string
  target: string | null
  detail: string | null
  ip: string | null
}

export interface SettingsRow {
  cap: number | null
  spent: number
}

export const USAGE_COLUMNS = 'account_id, day, capability, environment, requests, cache_hits, cost_micros'
export const AUDIT_COLUMNS = 'id, account_id, created_at, actor_type, actor_id, action, target, detail, ip'

export function toUsage(r: UsageDbRow): UsageRow {
  return {
    accountId: r.account_id,
    day: Number(r.day),
    capability: r.capability,
    environment: r.environment as Environment,
    requests: Number(r.requests),
    cacheHits: Number(r.cache_hits),
    costMicros: Number(r.cost_micros),
  }
}

export function toDebitGroup(r: DebitGroupRow): DebitGroup {
  return { day: Number(r.day), capability: r.capability, count: Number(r.n), amountMicros: Number(r.amount) }
}

export function toNonDebit(r: NonDebitRow): NonDebitEntry {
  return {
    id: r.id,
    kind: r.kind as NonDebitEntry['kind'],
    amountMicros: Number(r.amount_micros),
    reference: r.reference,
    createdAt: Number(r.created_at),
  }
}

export function toAudit(r: AuditRow): AuditEntry {
  return {
    id: r.id,
    accountId: r.account_id,
    createdAt: Number(r.created_at),
    actorType: r.actor_type as AuditEntry['actorType'],
    actorId: r.actor_id,
    action: r.action,
    target: r.target,
    detail: r.detail === null ? null : (JSON.parse(r.detail) as Record<string, unknown>),
    ip: r.ip,
  }
}

/** Usage deltas merged per counter and sorted (one row per key; a stable lock order on PostgreSQL). */
export function mergeUsage<T extends UsageRow>(deltas: readonly T[]): UsageRow[] {
  const out = new Map<string, UsageRow>()
  for (const d of deltas) {
    const k = `${d.accountId}\n${d.day}\n${d.capability}\n${d.environment}`
    const o = out.get(k)
    if (o) {
      o.requests += d.requests
      o.cacheHits += d.cacheHits
      o.costMicros += d.costMicros
    } else out.set(k, { ...d })
  }
  return [...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v)
}
