/**
 * Self-service account data, on the account store's own connection: key renames and
 * expiry (rotation overlap), the monthly spend cap, per-day usage counters, ledger views grouped per
 * day and capability, and the audit log. Keys are created and revoked through the AccountStore's
 * insertKey/revokeKey (one path, so whatever hooks those sees every key change).
 *
 * Units as in types.ts: micro-dollars, epoch milliseconds. A "day" is the UTC day number
 * (epoch ms ÷ 86 400 000, floored); a "month" is UTC year × 12 + month index (0–11).
 */
import type { ApiKeyRecord, Environment, LedgerKind } from './types.ts'

export const DAY_MS = 86_400_000

/** UTC day number of an epoch-ms time. */
export function dayOf(ms: number): number {
  return Math.floor(ms / DAY_MS)
}

/** UTC month number (year × 12 + month index) of an epoch-ms time. */
export function monthOf(ms: number): number {
  const d = new Date(ms)
  return d.getUTCFullYear() * 12 + d.getUTCMonth()
}

/** One aggregated increment of a usage counter (summed by the caller before it is written). */
export interface UsageDelta {
  accountId: string
  day: number
  capability: string
  environment: Environment
  requests: number
  cacheHits: number
  costMicros: number
}

export type UsageRow = UsageDelta

/** Debits of one UTC day and capability, summed. */
export interface DebitGroup {
  day: number
  capability: string | null
  count: number
  /** Positive: what was spent. */
  amountMicros: number
}

interface AccountSettings {
  spendCapMicros: number | null
  /** Settled debits of the UTC month of `now` (reservations not included). */
  monthSpentMicros: number
}

/** `client`: an OAuth client, acting through the token or revocation endpoint (id: its client_id). */
export type ActorType = 'session' | 'key' | 'operator' | 'client'

export interface AuditEntry {
  id: string
  accountId: string
  createdAt: number
  actorType: ActorType
  /** The key id, the session's e-mail address, the operator's name, or an OAuth client id. */
  actorId: string
  /** e.g. key.created, key.revoked, spend_cap.set, oauth.approved, oauth.grant_revoked */
  action: string
  /** What was changed (a key id), if anything in particular. */
  target: string | null
  detail: Record<string, unknown> | null
  ip: string | null
}

export interface NonDebitEntry {
  id: string
  kind: Exclude<LedgerKind, 'debit'>
  amountMicros: number
  reference: string | null
  createdAt: number
}

export interface SelfServiceStore {
  /** Renames a key of the account; null when the account has no such key. */
  renameKey(accountId: string, keyId: string, name: string | null): Promise<ApiKeyRecord | null>
  /**
   * Makes a live key of the account expire at `at` (never later than an expiry it already has;
   * a revoked key is left as it is). Null when the account has no such key.
   */
  expireKey(accountId: string, keyId: string, at: number): Promise<ApiKeyRecord | null>

  /** Null removes the cap. Returns false when the account does not exist. */
  setSpendCap(accountId: string, capMicros: number | null): Promise<boolean>
  settings(accountId: string, now: number): Promise<AccountSettings | null>

  /** Adds the deltas to their counters (upsert; one transaction). */
  addUsage(deltas: readonly UsageDelta[]): Promise<void>
  /** Counters of days in [fromDay, toDay], ordered by day, capability, environment. */
  usage(accountId: string, range: { fromDay: number; toDay: number }): Promise<UsageRow[]>

  /** Debits in [from, to) grouped per UTC day and capability, ordered by day, capability. */
  debitsByDay(accountId: string, range: { from: number; to: number }): Promise<DebitGroup[]>
  /** Top-ups, credits and refunds in [from, to), oldest first, at most `limit`. */
  nonDebits(accountId: string, range: { from: number; to: number; limit: number }): Promise<NonDebitEntry[]>

  appendAudit(entry: AuditEntry): Promise<void>
  /** Audit entries in [from, to), newest first, at most `limit`. */
  audit(accountId: string, range: { from: number; to: number; limit: number }): Promise<AuditEntry[]>
}
