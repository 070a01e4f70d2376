/**
 * Self-service account API: the account's keys, usage, ledger, spend cap and audit
 * log. Every change is made for an `Actor` (a session, or — for reads only — a key of the account)
 * and recorded in the audit log with who, what, when and from which address.
 *
 * Isolation: every key operation is scoped to the caller's account in the store's SQL or checked
 * against it here; a key of another account is "not found" (404), never "forbidden", so existence
 * does not leak.
 */
import { MAX_RANGE_DAYS } from '../../contract/ops/self-service.ts'
import { microsToUsd, usdToMicros } from '../../contract/pricing.ts'
import type { FlatTable } from '../../contract/table.ts'
import { AppError } from '../../platform/errors.ts'
import { type ActorType, DAY_MS, dayOf, type NonDebitEntry } from '../../store/accounts/self-service-types.ts'
import type { ApiKeyRecord, Environment } from '../../store/accounts/types.ts'
import { flushUsage } from '../billing/usage.ts'
import type { ServiceContext } from '../context.ts'
import { recordAudit } from '../identity/audit.ts'
import { forgetKey, issueKey } from '../identity/keys.ts'
import { revokePair } from '../oauth/common.ts'

export interface Actor {
  accountId: string
  type: Extract<ActorType, 'session' | 'key'>
  /** Session e-mail or key id. */
  id: string
  ip: string | null
}

const iso = (ms: number) => new Date(ms).toISOString()
const isoDay = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10)

function keyView(k: ApiKeyRecord, now: number) {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    environment: k.environment,
    kind: k.kind,
    tier: k.tier,
    status:
      k.revokedAt !== null
        ? ('revoked' as const)
        : k.expiresAt !== null && k.expiresAt <= now
          ? ('expired' as const)
          : ('active' as const),
    created_at: iso(k.createdAt),
    last_used_at: k.lastUsedAt === null ? null : iso(k.lastUsedAt),
    expires_at: k.expiresAt === null ? null : iso(k.expiresAt),
    revoked_at: k.revokedAt === null ? null : iso(k.revokedAt),
  }
}

function audit(
  ctx: ServiceContext,
  actor: Actor,
  action: string,
  target: string | null,
  detail: Record<string, unknown> | null,
): Promise<void> {
  return recordAudit(ctx, actor, action, target, detail)
}

const notFound = (id: string) => new AppError('NOT_FOUND', `The account has no API key ${id}`)

/** A key of the account, OAuth access tokens included, else 404. */
async function accountKey(ctx: ServiceContext, accountId: string, keyId: string): Promise<ApiKeyRecord> {
  const k = await ctx.accounts.getKey(keyId)
  if (!k || k.accountId !== accountId) throw notFound(keyId)
  return k
}

/** A key of the account that is not an OAuth access token (those belong to their grant: 409). */
async function ownKey(ctx: ServiceContext, accountId: string, keyId: string): Promise<ApiKeyRecord> {
  const k = await accountKey(ctx, accountId, keyId)
  if (k.clientId !== null)
    throw new AppError(
      'CONFLICT',
      `${keyId} is an OAuth access token of client ${k.clientId}: it cannot be renamed or rotated; ` +
        `revoke the grant instead (DELETE /account/oauth-grants/${k.clientId})`,
    )
  return k
}

export async function listKeys(ctx: ServiceContext, accountId: string) {
  const now = ctx.now()
  const keys = await ctx.accounts.listKeys(accountId)
  return {
    account_id: accountId,
    keys: keys.filter((k) => k.clientId === null).map((k) => keyView(k, now)),
  }
}

export async function createKey(
  ctx: ServiceContext,
  actor: Actor,
  input: { name?: string; environment: Environment },
) {
  const { apiKey, record } = await issueKey(ctx, {
    accountId: actor.accountId,
    kind: 'agent',
    environment: input.environment,
    name: input.name ?? null,
  })
  await audit(ctx, actor, 'key.created', record.id, {
    name: record.name,
    environment: record.environment,
    prefix: record.prefix,
  })
  return { api_key: apiKey, key: keyView(record, ctx.now()) }
}

export async function renameKey(ctx: ServiceContext, actor: Actor, keyId: string, name: string | null) {
  const before = await ownKey(ctx, actor.accountId, keyId)
  const k = await ctx.accounts.selfService().renameKey(actor.accountId, keyId, name)
  if (!k) throw notFound(keyId)
  await audit(ctx, actor, 'key.renamed', k.id, { from: before.name, to: k.name })
  return keyView(k, ctx.now())
}

export async function rotateKey(ctx: ServiceContext, actor: Actor, keyId: string, overlapSeconds: number) {
  const old = await ownKey(ctx, actor.accountId, keyId)
  const now = ctx.now()
  if (old.revokedAt !== null)
    throw new AppError('CONFLICT', `API key ${keyId} is revoked: create a new key instead of rotating it`)
  if (old.expiresAt !== null && old.expiresAt <= now)
    throw new AppError('CONFLICT', `API key ${keyId} has expired: create a new key instead of rotating it`)
  const { apiKey, record } = await issueKey(ctx, {
    accountId: actor.accountId,
    kind: old.kind,
    environment: old.environment,
    tier: old.tier,
    name: old.name,
    expiresAt: old.expiresAt,
  })
  let previous: ApiKeyRecord | null
  if (overlapSeconds === 0) {
    previous = await ctx.accounts.revokeKey(old.id, now)
  } else {
    previous = await ctx.accounts
      .selfService()
      .expireKey(actor.accountId, old.id, now + overlapSeconds * 1000)
  }
  // This process stops honouring the old record at once (its cached copy has no expiry).
  forgetKey(ctx, old.id)
  await audit(ctx, actor, 'key.rotated', old.id, {
    new_key_id: record.id,
    overlap_seconds: overlapSeconds,
    old_key_until: iso(overlapSeconds === 0 ? now : now + overlapSeconds * 1000),
  })
  return {
    api_key: apiKey,
    key: keyView(record, now),
    previous: keyView(previous ?? old, now),
  }
}

/**
 * Revokes a key of the account. An OAuth access token is revoked with its whole grant: alone it
 * would come back at the client's next refresh, and what the user means is to stop the agent.
 */
export async function revokeKey(ctx: ServiceContext, actor: Actor, keyId: string) {
  const before = await accountKey(ctx, actor.accountId, keyId)
  if (before.clientId !== null) {
    await revokePair(ctx, actor.accountId, before.clientId, { actor, reason: 'key_deleted' })
    return keyView((await ctx.accounts.getKey(keyId)) ?? before, ctx.now())
  }
  const now = ctx.now()
  const k = before.revokedAt !== null ? before : await ctx.accounts.revokeKey(keyId, now)
  if (!k) throw notFound(keyId)
  forgetKey(ctx, keyId)
  if (before.revokedAt === null)
    await audit(ctx, actor, 'key.revoked', keyId, { name: k.name, prefix: k.prefix })
  return keyView(k, now)
}

/** Inclusive UTC day range from optional YYYY-MM-DD bounds (default: the last 30 days). */
function dayRange(now: number, from?: string, to?: string, defaultDays = 30) {
  const toDay = to !== undefined ? dayOf(Date.parse(`${to}T00:00:00Z`)) : dayOf(now)
  const fromDay = from !== undefined ? dayOf(Date.parse(`${from}T00:00:00Z`)) : toDay - (defaultDays - 1)
  if (!Number.isFinite(fromDay) || !Number.isFinite(toDay))
    throw new AppError('INVALID_REQUEST', 'from and to must be dates (YYYY-MM-DD)')
  if (fromDay > toDay)
    throw new AppError('INVALID_REQUEST', `from (${from}) is after to (${to ?? isoDay(toDay)})`)
  if (toDay - fromDay + 1 > MAX_RANGE_DAYS)
    throw new AppError('INVALID_REQUEST', `The range spans more than ${MAX_RANGE_DAYS} days: ask for less`)
  return { fromDay, toDay }
}

export async function usageView(ctx: ServiceContext, accountId: string, from?: string, to?: string) {
  const range = dayRange(ctx.now(), from, to)
  // This process's counts of the last moments are written first, so a caller sees its own calls.
  await flushUsage(ctx)
  const rows = await ctx.accounts.selfService().usage(accountId, range)
  const totals = { requests: 0, cache_hits: 0, cost_micros: 0 }
  for (const r of rows) {
    totals.requests += r.requests
    totals.cache_hits += r.cacheHits
    totals.cost_micros += r.costMicros
  }
  return {
    account_id: accountId,
    from: isoDay(range.fromDay),
    to: isoDay(range.toDay),
    days: rows.map((r) => ({
      date: isoDay(r.day),
      capability: r.capability,
      environment: r.environment,
      requests: r.requests,
      cache_hits: r.cacheHits,
      cost_usd: microsToUsd(r.costMicros),
    })),
    totals: {
      requests: totals.requests,
      cache_hits: totals.cache_hits,
      cost_usd: microsToUsd(totals.cost_micros),
    },
  }
}

interface LedgerRowView {
  date: string
  kind: string
  capability: string | null
  count: number
  amount_usd: number
  reference: string | null
  id: string | null
  created_at: string | null
}

export async function ledgerView(
  ctx: ServiceContext,
  accountId: string,
  q: { from?: string; to?: string; limit: number },
) {
  const { fromDay, toDay } = dayRange(ctx.now(), q.from, q.to)
  const span = { from: fromDay * DAY_MS, to: (toDay + 1) * DAY_MS }
  const ss = ctx.accounts.selfService()
  const [debits, others] = await Promise.all([
    ss.debitsByDay(accountId, span),
    ss.nonDebits(accountId, { ...span, limit: q.limit + 1 }),
  ])
  const shown: NonDebitEntry[] = others.slice(0, q.limit)
  const rows: (LedgerRowView & { sort: number })[] = []
  const totals = { top_ups: 0, credits: 0, refunds: 0, reversals: 0, spent: 0, charged: 0 }
  for (const e of shown) {
    if (e.kind === 'topup') totals.top_ups += e.amountMicros
    else if (e.kind === 'credit') totals.credits += e.amountMicros
    else if (e.kind === 'refund') totals.refunds += e.amountMicros
    else totals.reversals += e.amountMicros
    rows.push({
      sort: e.createdAt,
      date: isoDay(dayOf(e.createdAt)),
      kind: e.kind,
      capability: null,
      count: 1,
      amount_usd: microsToUsd(e.amountMicros),
      reference: e.reference,
      id: e.id,
      created_at: iso(e.createdAt),
    })
  }
  for (const g of debits) {
    totals.spent += g.amountMicros
    totals.charged += g.count
    rows.push({
      // A day's debit groups follow that day's other entries.
      sort: (g.day + 1) * DAY_MS - 1,
      date: isoDay(g.day),
      kind: 'debit',
      capability: g.capability,
      count: g.count,
      amount_usd: -microsToUsd(g.amountMicros),
      reference: null,
      id: null,
      created_at: null,
    })
  }
  rows.sort((a, b) => a.sort - b.sort)
  return {
    account_id: accountId,
    from: isoDay(fromDay),
    to: isoDay(toDay),
    rows: rows.map(({ sort: _sort, ...r }) => r),
    totals: {
      top_ups_usd: microsToUsd(totals.top_ups),
      credits_usd: microsToUsd(totals.credits),
      refunds_usd: microsToUsd(totals.refunds),
      reversals_usd: microsToUsd(totals.reversals),
      spent_usd: microsToUsd(totals.spent),
      charged_requests: totals.charged,
    },
    truncated: others.length > q.limit,
  }
}

/** The ledger view as one flat table (CSV / Parquet). */
export function ledgerTable(view: Awaited<ReturnType<typeof ledgerView>>): FlatTable {
  const r = view.rows
  return {
    columns: [
      { name: 'date', type: 'TIMESTAMP_MILLIS', values: r.map((x) => Date.parse(`${x.date}T00:00:00Z`)) },
      { name: 'kind', type: 'UTF8', values: r.map((x) => x.kind) },
      { name: 'capability', type: 'UTF8', values: r.map((x) => x.capability) },
      { name: 'count', type: 'INT64', values: r.map((x) => x.count) },
      { name: 'amount_usd', type: 'DOUBLE', values: r.map((x) => x.amount_usd) },
      { name: 'reference', type: 'UTF8', values: r.map((x) => x.reference) },
      { name: 'id', type: 'UTF8', values: r.map((x) => x.id) },
      { name: 'created_at', type: 'UTF8', values: r.map((x) => x.created_at) },
    ],
  }
}

export async function settingsView(ctx: ServiceContext, accountId: string) {
  const now = ctx.now()
  const s = await ctx.accounts.selfService().settings(accountId, now)
  if (!s) throw new AppError('NOT_FOUND', 'The account no longer exists')
  const d = new Date(now)
  return {
    account_id: accountId,
    spend_cap_usd: s.spendCapMicros === null ? null : microsToUsd(s.spendCapMicros),
    month_spent_usd: microsToUsd(s.monthSpentMicros),
    month_resets_at: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString(),
  }
}

export async function updateSettings(
  ctx: ServiceContext,
  actor: Actor,
  input: { spend_cap_usd?: number | null },
) {
  if (input.spend_cap_usd !== undefined) {
    const before = await settingsView(ctx, actor.accountId)
    const cap = input.spend_cap_usd === null ? null : usdToMicros(input.spend_cap_usd)
    if (!(await ctx.accounts.selfService().setSpendCap(actor.accountId, cap)))
      throw new AppError('NOT_FOUND', 'The account no longer exists')
    await audit(ctx, actor, 'spend_cap.set', null, {
      from_usd: before.spend_cap_usd,
      to_usd: cap === null ? null : microsToUsd(cap),
    })
  }
  return settingsView(ctx, actor.accountId)
}

export async function auditView(
  ctx: ServiceContext,
  accountId: string,
  q: { from?: string; to?: string; limit: number },
) {
  const { fromDay, toDay } = dayRange(ctx.now(), q.from, q.to, MAX_RANGE_DAYS)
  const rows = await ctx.accounts
    .selfService()
    .audit(accountId, { from: fromDay * DAY_MS, to: (toDay + 1) * DAY_MS, limit: q.limit + 1 })
  return {
    account_id: accountId,
    entries: rows.slice(0, q.limit).map((e) => ({
      id: e.id,
      at: iso(e.createdAt),
      actor: { type: e.actorType, id: e.actorId },
      action: e.action,
      target: e.target,
      detail: e.detail,
      ip: e.ip,
    })),
    truncated: rows.length > q.limit,
  }
}
