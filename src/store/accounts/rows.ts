/**
 * Row shapes shared by both SQL dialects (snake_case columns, numbers already normalised) and
 * their mapping to the interface types, plus the argument checks both implementations apply.
 */
import type { Account, AccountKind, ApiKeyRecord, LedgerEntry, LedgerKind } from './types.ts'

export interface AccountRow {
  id: string
  email: string | null
  kind: string
  created_at: number
}

export interface KeyRow {
  id: string
  account_id: string
  kind: string
  environment: string
  prefix: string
  name: string | null
  tier: string
  created_at: number
  last_used_at: number | null
  revoked_at: number | null
  expires_at: number | null
  client_id: string | null
}

export interface LedgerRow {
  id: string
  account_id: string
  kind: string
  amount_micros: number
  request_id: string | null
  capability: string | null
  reference: string | null
  key_id: string | null
  created_at: number
}

export interface SummaryRow {
  spent: number | null
  requests: number | null
  topups: number | null
}

export const ACCOUNT_COLUMNS = 'id, email, kind, created_at'
export const KEY_COLUMNS =
  'id, account_id, kind, environment, prefix, name, tier, created_at, last_used_at, revoked_at, expires_at, client_id'
export const LEDGER_COLUMNS =
  'id, account_id, kind, amount_micros, request_id, capability, reference, key_id, created_at'

/** One summary query for both dialects: debits are stored negative, spending is reported positive. */
export const SUMMARY_SELECT = `SELECT
  COALESCE(SUM(CASE WHEN kind = 'debit' THEN -amount_micros ELSE 0 END), 0) AS spent,
  COALESCE(SUM(CASE WHEN kind = 'debit' THEN 1 ELSE 0 END), 0) AS requests,
  COALESCE(SUM(CASE WHEN kind = 'topup' THEN amount_micros ELSE 0 END), 0) AS topups
  FROM ledger`

export function toAccount(r: AccountRow): Account {
  return { id: r.id, email: r.email, kind: r.kind as AccountKind, createdAt: r.created_at }
}

export function toKey(r: KeyRow): ApiKeyRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    kind: r.kind as ApiKeyRecord['kind'],
    environment: r.environment as ApiKeyRecord['environment'],
    prefix: r.prefix,
    name: r.name,
    tier: r.tier as ApiKeyRecord['tier'],
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
    revokedAt: r.revoked_at,
    expiresAt: r.expires_at,
    clientId: r.client_id,
  }
}

export function toEntry(r: LedgerRow): LedgerEntry {
  return {
    id: r.id,
    accountId: r.account_id,
    kind: r.kind as LedgerKind,
    amountMicros: r.amount_micros,
    requestId: r.request_id,
    capability: r.capability,
    reference: r.reference,
    keyId: r.key_id,
    createdAt: r.created_at,
  }
}

export function toSummary(r: SummaryRow | undefined) {
  return {
    spentMicros: Number(r?.spent ?? 0),
    requests: Number(r?.requests ?? 0),
    topUpsMicros: Number(r?.topups ?? 0),
  }
}

/** Money arguments are whole micro-dollars; anything else is a caller bug, not a business refusal. */
export function checkMicros(value: number, what: string, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`${what} must be an integer number of micro-dollars ≥ ${min}, got ${value}`)
  }
}
